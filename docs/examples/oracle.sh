#!/usr/bin/env bash
# The kipopt oracle from a shell: one check, a batch of checks, a streamed batch, conformance vectors.
# Run by tests/test_oracle_docs.py. KIPOPT may point at the kipopt executable (default: kipopt on PATH).
set -euo pipefail
KIPOPT=${KIPOPT:-kipopt}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# --- 1. one assignment, one process: exit 0 = feasible and optimal within --tolerance, 1 = not, 2 = bad input
"$KIPOPT" generate tasks --seed 7 --tasks 24 --clients 6 --out instance.json
"$KIPOPT" solve instance.json --method kafka.rack_active > kafka.json
"$KIPOPT" check instance.json kafka.json --rule rack_active > verdict.json
echo "1. kafka.rack_active is optimal for rack_active: $(grep -c '"ok": true' verdict.json) verdict ok"

# An assignment to judge that is not optimal: with strategy "none" Kafka leaves the actives where they were.
"$KIPOPT" generate tasks --seed 7 --tasks 24 --clients 6 --strategy none --out lazy.json
"$KIPOPT" solve lazy.json --method kafka.rack_active > lazy-kafka.json
if "$KIPOPT" check lazy.json lazy-kafka.json --rule rack_active > /dev/null; then
  echo "unexpected: the unoptimised assignment passed" >&2; exit 1
else
  echo "1. the unoptimised assignment fails the check (exit status $?)"
fi

# --- 2. many assignments, one process: JSON lines in, one verdict line out per line, in order
compact() { tr -d '\n' < "$1"; }  # kipopt's JSON output is indented; a JSON line must be one line
{
  printf '{"id": "kafka", "instance_path": "instance.json", "solution": %s}\n' "$(compact kafka.json)"
  printf '{"id": "lazy", "instance_path": "lazy.json", "solution": %s, "rule": "rack_active"}\n' "$(compact lazy-kafka.json)"
  printf '{"id": "lazy-tolerated", "instance_path": "lazy.json", "solution": %s, "tolerance": 1.0}\n' "$(compact lazy-kafka.json)"
  printf '{"id": "typo", "instance_path": "instance.json", "solution": {"asignment": {}}}\n'
} > lines.jsonl
status=0
"$KIPOPT" check --batch lines.jsonl > verdicts.jsonl 2> summary.txt || status=$?
echo "2. batch exit status $status (2: a line was malformed; 1 would mean only failed checks)"
cut -c1-72 verdicts.jsonl | sed 's/^/   /'
grep -q '"field":"solution.asignment"' verdicts.jsonl
test "$(wc -l < verdicts.jsonl)" -eq 4 && test "$status" -eq 2

# --- 3. streamed: ask one question, read its answer, then ask the next (a coprocess holds the oracle open)
coproc ORACLE { "$KIPOPT" check --batch - 2> /dev/null; }
for id in first second; do
  printf '{"id": "%s", "instance_path": "instance.json", "solution": %s}\n' "$id" "$(compact kafka.json)" >&"${ORACLE[1]}"
  IFS= read -r verdict <&"${ORACLE[0]}"
  echo "3. answer to \"$id\" read before the next question was written: ${verdict:0:40}..."
done
exec {ORACLE[1]}>&-
wait "$ORACLE_PID"

# --- 4. conformance vectors: what Java Kafka answers, as files to compare your assignor with
"$KIPOPT" vectors tasks --method kafka.rack_active --count 3 --seed 1 --tasks 24 --clients 6 --out vectors 2> /dev/null > manifest.json
"$KIPOPT" vectors --curated replicas --out curated 2> /dev/null > /dev/null
echo "4. $(ls vectors | grep -c seed) generated vectors, $(ls curated | grep -vc manifest) curated replica vectors"
"$KIPOPT" schema vector > vector.schema.json
echo "done"
