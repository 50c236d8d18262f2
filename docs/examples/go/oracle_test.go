// Package oracle_test shows kipopt as a test oracle from Go: one `kipopt check --batch` process
// per test binary, JSON lines over os/exec pipes, and conformance vectors compared with an
// assignor under test. Copy it into your module and replace assign with your own assignor.
package oracle_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
)

// verdict is one line printed by `kipopt check --batch` (`kipopt schema check`).
type verdict struct {
	ID        string          `json:"id"`
	OK        bool            `json:"ok"`
	Feasible  bool            `json:"feasible"`
	Objective float64         `json:"objective"`
	Optimum   *float64        `json:"optimum"`
	Gap       *float64        `json:"gap"`
	Error     string          `json:"error"`
	Field     string          `json:"field"`
	Violation json.RawMessage `json:"violations"`
}

// oracle is a running `kipopt check --batch -`: write a line, read its verdict.
type oracle struct {
	cmd *exec.Cmd
	in  *json.Encoder
	out *bufio.Scanner
}

func startOracle(t *testing.T) *oracle {
	t.Helper()
	cmd := exec.Command("kipopt", "check", "--batch", "-")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("kipopt not available: %v", err)
	}
	scanner := bufio.NewScanner(stdout)
	scanner.Buffer(make([]byte, 1<<20), 64<<20) // verdicts carry metrics: allow long lines
	o := &oracle{cmd: cmd, in: json.NewEncoder(stdin), out: scanner}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	return o
}

// check asks for one verdict; json.Encoder writes exactly one line per value.
func (o *oracle) check(t *testing.T, id string, instance any, assignment any, rule string) verdict {
	t.Helper()
	line := map[string]any{"id": id, "instance": instance, "solution": map[string]any{"assignment": assignment}}
	if rule != "" {
		line["rule"] = rule
	}
	if err := o.in.Encode(line); err != nil {
		t.Fatal(err)
	}
	if !o.out.Scan() {
		t.Fatalf("kipopt ended early: %v", o.out.Err())
	}
	var v verdict
	if err := json.Unmarshal(o.out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.ID != id {
		t.Fatalf("verdict for %q, asked %q", v.ID, id)
	}
	return v
}

// assign stands for the assignor under test. This sample keeps every task on its current client,
// which is always feasible for rack_active but rarely optimal.
func assign(instance map[string]any) map[string]any {
	out := map[string]any{}
	for id, c := range instance["clients"].(map[string]any) {
		active, ok := c.(map[string]any)["active"].([]any)
		if !ok {
			active = []any{}
		}
		out[id] = map[string]any{"active": active}
	}
	return out
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestAssignorAgainstOptimum: every generated instance, one process, one line per instance.
func TestAssignorAgainstOptimum(t *testing.T) {
	dir := t.TempDir()
	gen := exec.Command("kipopt", "vectors", "tasks", "--method", "kafka.rack_active", "--count", "20",
		"--seed", "1", "--tasks", "24", "--clients", "6", "--out", dir)
	if err := gen.Run(); err != nil {
		t.Skipf("kipopt not available: %v", err)
	}
	o := startOracle(t)
	files, _ := filepath.Glob(filepath.Join(dir, "tasks.*.json"))
	sort.Strings(files)
	for _, f := range files {
		instance := readJSON(t, f)["instance"].(map[string]any)
		v := o.check(t, filepath.Base(f), instance, assign(instance), "rack_active")
		if v.Error != "" {
			t.Fatalf("%s: bad line, field %s: %s", f, v.Field, v.Error)
		}
		if !v.Feasible {
			t.Errorf("%s: infeasible: %s", f, v.Violation)
		}
		if v.Gap != nil {
			t.Logf("%s: objective %v, optimum %v, gap %.3f", filepath.Base(f), v.Objective, *v.Optimum, *v.Gap)
		}
	}
}

// TestSameAsKafka: conformance vectors say what Java Kafka answers; compare task lists as sets.
func TestSameAsKafka(t *testing.T) {
	dir := os.Getenv("KIPOPT_VECTORS") // e.g. written once by `kipopt vectors --curated --out DIR`
	if dir == "" {
		t.Skip("set KIPOPT_VECTORS to a folder written by kipopt vectors")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.kafka.rack_active.json"))
	for _, f := range files {
		vector := readJSON(t, f)
		expected := vector["expected"].(map[string]any)["assignment"].(map[string]any)
		got := assign(vector["instance"].(map[string]any))
		for client, roles := range expected {
			want := fmt.Sprint(sorted(roles.(map[string]any)["active"]))
			have := fmt.Sprint(sorted(got[client].(map[string]any)["active"]))
			if want != have {
				t.Errorf("%s: client %s: Kafka (%s) gives %s, got %s", vector["name"], client,
					vector["kafka_class"], want, have)
			}
		}
	}
}

func sorted(list any) []string {
	items, _ := list.([]any)
	out := make([]string, 0, len(items))
	for _, x := range items {
		out = append(out, fmt.Sprint(x))
	}
	sort.Strings(out)
	return out
}
