package dev.pacer.shared;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * A guarded listener never lets what it throws reach the caller, is told of every event whether it
 * threw before or not, and has its first failure alone logged, at WARN, by the logger named.
 */
class GuardedListenerTest {

  @Test
  void aListenerThatThrowsIsLoggedOnceAndNeverStopsTheCaller() {
    AtomicInteger told = new AtomicInteger();
    Consumer<String> broken =
        event -> {
          told.incrementAndGet();
          throw new IllegalStateException("broken on " + event);
        };
    GuardedListener<Consumer<String>> guarded =
        new GuardedListener<>(
            broken, "dev.pacer.test.Owner", () -> "Request listener x", "requests go on");
    List<String> after = new ArrayList<>();
    String log =
        stderrOf(
            () -> {
              for (int i = 0; i < 5; i++) {
                String event = "e" + i;
                guarded.tell(l -> l.accept(event));
                after.add(event);
              }
            });
    assertThat(told).as("told of every event").hasValue(5);
    assertThat(after).as("the caller went on after each").hasSize(5);
    List<String> warnings = log.lines().filter(l -> l.contains("WARN")).toList();
    assertThat(warnings)
        .singleElement()
        .isEqualTo(
            "[main] WARN dev.pacer.test.Owner - Request listener x threw; requests go on, and its"
                + " later failures are not logged");
    assertThat(log).contains("java.lang.IllegalStateException: broken on e0");
    assertThat(log).doesNotContain("broken on e1");
  }

  @Test
  void aFailureHandedInByTheCallerIsLoggedOnceToo() {
    List<String> heard = new ArrayList<>();
    GuardedListener<List<String>> guarded =
        new GuardedListener<>(heard, "dev.pacer.test.Owner", () -> "Listener y", "pacing goes on");
    String log =
        stderrOf(
            () -> {
              guarded.listener().add("direct");
              guarded.failed(new IllegalStateException("first"));
              guarded.failed(new IllegalStateException("second"));
            });
    assertThat(heard).containsExactly("direct");
    assertThat(log.lines().filter(l -> l.contains("WARN"))).hasSize(1);
    assertThat(log).contains("Listener y threw; pacing goes on").contains("first");
    assertThat(log).doesNotContain("second");
  }

  @Test
  void aListenerThatDoesNotThrowIsToldAndNothingIsLogged() {
    List<String> heard = new ArrayList<>();
    GuardedListener<List<String>> guarded =
        new GuardedListener<>(heard, "dev.pacer.test.Owner", () -> "Listener z", "pacing goes on");
    String log = stderrOf(() -> guarded.tell(l -> l.add("event")));
    assertThat(heard).containsExactly("event");
    assertThat(log).isEmpty();
  }

  @Test
  void eachGuardLogsItsOwnFirstFailure() {
    Consumer<String> broken =
        event -> {
          throw new IllegalStateException(event);
        };
    GuardedListener<Consumer<String>> one =
        new GuardedListener<>(broken, "dev.pacer.test.Owner", () -> "one", "pacing goes on");
    GuardedListener<Consumer<String>> two =
        new GuardedListener<>(broken, "dev.pacer.test.Owner", () -> "two", "pacing goes on");
    String log =
        stderrOf(
            () -> {
              one.tell(l -> l.accept("a"));
              two.tell(l -> l.accept("b"));
              one.tell(l -> l.accept("c"));
            });
    assertThat(log.lines().filter(l -> l.contains("WARN")))
        .containsExactly(
            "[main] WARN dev.pacer.test.Owner - one threw; pacing goes on, and its later"
                + " failures are not logged",
            "[main] WARN dev.pacer.test.Owner - two threw; pacing goes on, and its later"
                + " failures are not logged");
  }

  /** What {@code run} wrote to standard error, where the tests' SLF4J logger writes. */
  private static String stderrOf(Runnable run) {
    PrintStream original = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      run.run();
    } finally {
      System.setErr(original);
    }
    return captured.toString(StandardCharsets.UTF_8);
  }
}
