import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * kipopt as a test oracle from JUnit 5: one {@code kipopt check --batch} process for the whole class
 * (started with {@link ProcessBuilder}), JSON lines in and out with Jackson, and conformance vectors
 * compared with the assignor under test. Replace {@link #assign} with your own assignor.
 */
class KipoptOracleTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Process oracle;
    private static BufferedWriter toOracle;
    private static BufferedReader fromOracle;

    @BeforeAll
    static void startOracle() throws IOException {
        oracle = new ProcessBuilder("kipopt", "check", "--batch", "-")
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        toOracle = new BufferedWriter(new OutputStreamWriter(oracle.getOutputStream(), UTF_8));
        fromOracle = new BufferedReader(new InputStreamReader(oracle.getInputStream(), UTF_8));
    }

    @AfterAll
    static void stopOracle() throws Exception {
        toOracle.close(); // end of input: kipopt prints its summary on stderr and exits
        oracle.waitFor();
    }

    /** One question, one answer: the verdict of {@code kipopt schema check}. */
    static JsonNode check(String id, JsonNode instance, JsonNode assignment, String rule) throws IOException {
        ObjectNode line = JSON.createObjectNode();
        line.put("id", id);
        line.set("instance", instance);
        line.putObject("solution").set("assignment", assignment);
        line.put("rule", rule);
        toOracle.write(JSON.writeValueAsString(line)); // one line: Jackson does not indent by default
        toOracle.newLine();
        toOracle.flush();
        JsonNode verdict = JSON.readTree(fromOracle.readLine());
        assertEquals(id, verdict.path("id").asText());
        assertTrue(verdict.path("error").isMissingNode(), () -> "bad line: " + verdict.path("error").asText());
        return verdict;
    }

    /** The assignor under test. This sample keeps every task on its current client. */
    static JsonNode assign(JsonNode instance) {
        ObjectNode assignment = JSON.createObjectNode();
        Iterator<Map.Entry<String, JsonNode>> clients = instance.get("clients").fields();
        while (clients.hasNext()) {
            Map.Entry<String, JsonNode> client = clients.next();
            assignment.putObject(client.getKey()).set("active", client.getValue().path("active"));
        }
        return assignment;
    }

    @Test
    void assignmentsAreFeasible(@TempDir Path dir) throws Exception {
        Process gen = new ProcessBuilder("kipopt", "vectors", "tasks", "--method", "kafka.rack_active",
                "--count", "20", "--seed", "1", "--tasks", "24", "--clients", "6", "--out", dir.toString())
                .redirectErrorStream(true).start();
        gen.getInputStream().transferTo(java.io.OutputStream.nullOutputStream());
        assertEquals(0, gen.waitFor());
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "tasks.*.json")) {
            for (Path file : files) {
                JsonNode instance = JSON.readTree(file.toFile()).get("instance");
                JsonNode verdict = check(file.getFileName().toString(), instance, assign(instance), "rack_active");
                assertTrue(verdict.get("feasible").asBoolean(), () -> file + ": " + verdict.get("violations"));
                System.out.printf("%s: objective %s, optimum %s, gap %s%n", file.getFileName(),
                        verdict.get("objective"), verdict.get("optimum"), verdict.get("gap"));
            }
        }
    }

    /** Conformance: compare with what Java Kafka answers (task lists compare as sets). */
    @Test
    void sameAsKafka() throws IOException {
        String folder = System.getenv("KIPOPT_VECTORS"); // written by `kipopt vectors --curated --out DIR`
        if (folder == null) {
            return;
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(Path.of(folder), "*.kafka.rack_active.json")) {
            for (Path file : files) {
                JsonNode vector = JSON.readTree(file.toFile());
                JsonNode expected = vector.at("/expected/assignment");
                JsonNode mine = assign(vector.get("instance"));
                expected.fieldNames().forEachRemaining(client -> assertEquals(
                        tasks(expected.get(client).get("active")), tasks(mine.path(client).path("active")),
                        () -> vector.get("name").asText() + ": client " + client + " vs " + vector.get("kafka_class")));
            }
        }
    }

    private static TreeSet<String> tasks(JsonNode list) {
        TreeSet<String> out = new TreeSet<>();
        list.forEach(task -> out.add(task.asText()));
        return out;
    }
}
