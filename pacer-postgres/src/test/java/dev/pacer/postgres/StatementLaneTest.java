package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * The calls of a {@link StatementLane}: asks are strings, calls share a statement when their first
 * letters match, and the maker answers each ask with its upper case and the size of its group.
 */
class StatementLaneTest {

  private final List<List<String>> groupsMade = new CopyOnWriteArrayList<>();
  private final List<Thread> makers = new CopyOnWriteArrayList<>();

  private List<String> make(List<String> asks) {
    groupsMade.add(List.copyOf(asks));
    makers.add(Thread.currentThread());
    if (asks.get(0).startsWith("x")) {
      throw new IllegalStateException("no statement for " + asks);
    }
    List<String> answers = new ArrayList<>();
    asks.forEach(ask -> answers.add(ask.toUpperCase() + "/" + asks.size()));
    return asks.get(0).startsWith("s") ? answers.subList(1, answers.size()) : answers;
  }

  private final StatementLane<String, String> lane =
      new StatementLane<>(
          (a, b) -> a.charAt(0) == b.charAt(0), this::make, e -> "unmade: " + e.getMessage());

  @Test
  void aCallAloneIsMadeAloneByItsOwnThread() {
    assertThat(lane.call("a1")).contains("A1/1");
    assertThat(groupsMade).containsExactly(List.of("a1"));
    assertThat(makers).containsExactly(Thread.currentThread());
  }

  @Test
  void callsQueuedWhileTheLaneIsHeldAreMadeTogetherInTheOrderTheyCame() throws Exception {
    Map<String, Optional<String>> answers = new ConcurrentHashMap<>();
    List<Thread> callers = queueWhileHeldThenRelease(answers, "a1", "b1", "a2", "a3", "b2");

    assertThat(groupsMade).containsExactly(List.of("a1", "a2", "a3"), List.of("b1", "b2"));
    assertThat(makers).hasSize(2).allMatch(callers::contains);
    assertThat(makers.get(0)).isSameAs(makers.get(1));
    assertThat(answers)
        .containsExactlyInAnyOrderEntriesOf(
            Map.of(
                "a1",
                Optional.of("A1/3"),
                "a2",
                Optional.of("A2/3"),
                "a3",
                Optional.of("A3/3"),
                "b1",
                Optional.of("B1/2"),
                "b2",
                Optional.of("B2/2")));
  }

  @Test
  void aGroupWhoseMakerFailsIsAnsweredUnmadeAndTheGroupsAfterItAreMade() throws Exception {
    Map<String, Optional<String>> answers = new ConcurrentHashMap<>();
    queueWhileHeldThenRelease(answers, "x1", "s1", "a1", "x2", "s2");

    assertThat(groupsMade).containsExactly(List.of("x1", "x2"), List.of("s1", "s2"), List.of("a1"));
    assertThat(answers)
        .containsExactlyInAnyOrderEntriesOf(
            Map.of(
                "x1", Optional.of("unmade: no statement for [x1, x2]"),
                "x2", Optional.of("unmade: no statement for [x1, x2]"),
                "s1", Optional.of("unmade: 1 answers made for 2 calls"),
                "s2", Optional.of("unmade: 1 answers made for 2 calls"),
                "a1", Optional.of("A1/1")));
  }

  @Test
  void anInterruptedCallNotYetTakenIsDroppedNeverMadeAndKeepsItsInterrupt() throws Exception {
    Map<String, Optional<String>> answers = new ConcurrentHashMap<>();
    boolean[] interruptKept = {false};
    lane.hold();
    Thread caller =
        new Thread(
            () -> {
              answers.put("a1", lane.call("a1"));
              interruptKept[0] = Thread.currentThread().isInterrupted();
            });
    caller.start();
    awaitTrue(() -> lane.queued() == 1);
    caller.interrupt();
    caller.join(TimeUnit.SECONDS.toMillis(10));
    lane.release();

    assertThat(answers).containsExactly(Map.entry("a1", Optional.empty()));
    assertThat(interruptKept[0]).isTrue();
    assertThat(lane.queued()).isZero();
    assertThat(lane.call("b1")).contains("B1/1");
    assertThat(groupsMade).containsExactly(List.of("b1"));
  }

  /**
   * With the lane held, starts a caller for each ask, the next once the one before is queued; then
   * releases the lane and waits for every caller to be answered.
   */
  private List<Thread> queueWhileHeldThenRelease(
      Map<String, Optional<String>> answers, String... asks) throws InterruptedException {
    lane.hold();
    List<Thread> callers = new ArrayList<>();
    for (String ask : asks) {
      Thread caller = new Thread(() -> answers.put(ask, lane.call(ask)), "caller " + ask);
      callers.add(caller);
      caller.start();
      int queued = callers.size();
      awaitTrue(() -> lane.queued() == queued);
    }
    lane.release();
    for (Thread caller : callers) {
      caller.join(TimeUnit.SECONDS.toMillis(10));
    }
    return callers;
  }

  private static void awaitTrue(BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as("waited 10 s").isLessThan(deadline);
      Thread.onSpinWait();
    }
  }
}
