package dev.pacer.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** The door's JVM: which of its threads run at the real-time policy. */
class DoorTest {

  /** {@code SCHED_FIFO}, the policy field of {@code /proc/<pid>/task/<tid>/stat}. */
  private static final int SCHED_FIFO = 1;

  @Test
  void onlyTheThreadsThatStampRequestsAndTheVmThreadRunAtTheRealTimePolicy() throws Exception {
    try (Door door = Door.start()) {
      assumeTrue(door.realTime(), "chrt --fifo is not allowed here (root or CAP_SYS_NICE)");
      door.arrivals();
      Map<String, Integer> policies = policies(door.pid());
      System.out.println("the door's threads and their policies: " + policies);
      assertThat(policies)
          .as("the door's threads and their policies")
          .containsEntry("door-accept", SCHED_FIFO)
          .containsEntry("VM Thread", SCHED_FIFO);
      assertThat(policies.entrySet())
          .filteredOn(e -> e.getKey().startsWith("C1 CompilerThre"))
          .isNotEmpty()
          .allSatisfy(e -> assertThat(e.getValue()).as(e.getKey()).isNotEqualTo(SCHED_FIFO));
      assertThat(policies.entrySet())
          .filteredOn(e -> !e.getKey().startsWith("door") && !e.getKey().equals("VM Thread"))
          .allSatisfy(e -> assertThat(e.getValue()).as(e.getKey()).isNotEqualTo(SCHED_FIFO));
    }
  }

  /** Each thread of {@code pid} by name (with its id), and its scheduling policy. */
  private static Map<String, Integer> policies(long pid) throws IOException {
    Map<String, Integer> policies = new TreeMap<>();
    try (DirectoryStream<Path> tasks =
        Files.newDirectoryStream(Paths.get("/proc/" + pid + "/task"))) {
      for (Path task : tasks) {
        String name = Files.readString(task.resolve("comm")).trim();
        String stat = Files.readString(task.resolve("stat"));
        // Fields after the name, which is in parentheses and may hold spaces: state is field 3,
        // policy field 41.
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        int policy = Integer.parseInt(fields[41 - 3]);
        String key =
            name.startsWith("door") || name.equals("VM Thread")
                ? name
                : name + " #" + task.getFileName();
        policies.put(
            name.startsWith("C1 CompilerThre") ? name + " #" + task.getFileName() : key, policy);
      }
    }
    return policies;
  }
}
