package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.LimiterListener.Outcome;
import dev.pacer.LimiterListener.Turn;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.Reservation;
import dev.pacer.testing.FakeTime;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What a registry's listeners hear, on a fake clock: nothing here sleeps. */
class LimiterListenerTest {

  private final FakeTime time = new FakeTime();
  private final LocalCursor cursor = new LocalCursor(time);
  private final LimiterRegistry registry = new LimiterRegistry(cursor, time);

  private static Destination destination(String name) {
    return Destination.builder(name)
        .ratePerSecond(10)
        .maxConcurrency(1)
        .maxFetchingProcesses(2)
        .build();
  }

  @Test
  void hearsEveryLimiterOnceThoseBeforeItAndThoseAfter() {
    DestinationLimiter before = registry.limiter(destination("a"));
    Recording heard = new Recording();
    registry.addListener(heard);
    DestinationLimiter after = registry.limiter(destination("b"));
    registry.limiter(destination("b"));
    registry.limiter(destination("a"));
    assertThat(heard.created).containsExactly(before, after);
  }

  @Test
  void hearsEachTurnWithItsWaitAndARefusal() throws Exception {
    Recording heard = new Recording();
    registry.addListener(heard);
    DestinationLimiter limiter = registry.limiter(destination("a"));
    limiter.acquire().close();
    limiter.acquire().close();
    assertThat(limiter.tryAcquire(Duration.ofMillis(50))).isEmpty();
    assertThat(heard.turns)
        .containsExactly(
            new Turn("a", Outcome.SHARED, Duration.ZERO),
            new Turn("a", Outcome.SHARED, Duration.ofMillis(100)),
            new Turn("a", Outcome.REFUSED, Duration.ZERO));
  }

  @Test
  void aTurnPacedLocallyIsDegraded() throws Exception {
    LimiterRegistry down = new LimiterRegistry(new UnavailableCursor(), time);
    Recording heard = new Recording();
    down.addListener(heard);
    DestinationLimiter limiter = down.limiter(destination("a"));
    limiter.acquire().close();
    limiter.acquire().close();
    assertThat(heard.turns)
        .containsExactly(
            new Turn("a", Outcome.DEGRADED, Duration.ofMillis(200)),
            new Turn("a", Outcome.DEGRADED, Duration.ofMillis(200)));
  }

  @Test
  void hearsRatePressureWithTheNewMultiplierAndALockoutOnce() {
    Recording heard = new Recording();
    registry.addListener(heard);
    DestinationLimiter limiter = registry.limiter(destination("a"));
    limiter.noteAnswer(429, null, "u");
    limiter.noteAnswer(503, null, "u");
    limiter.noteAnswer(200, null, "u");
    limiter.noteAnswer(403, null, "https://x/y");
    limiter.noteAnswer(403, null, "https://x/z");
    assertThat(heard.throttled).containsExactly("a x2", "a x4");
    assertThat(heard.lockouts).containsExactly("a: HTTP 403 from https://x/y");
  }

  @Test
  void aLockoutAnnouncedThroughTheCursorIsHeardToo() {
    Recording heard = new Recording();
    registry.addListener(heard);
    registry.limiter(destination("a"));
    cursor.lockOut("a", "HTTP 403 elsewhere");
    assertThat(heard.lockouts).containsExactly("a: HTTP 403 elsewhere");
  }

  @Test
  void aListenerThatThrowsBreaksNoReservationAndTheOthersStillHear() throws Exception {
    LimiterListener broken =
        new LimiterListener() {
          @Override
          public void limiterCreated(DestinationLimiter limiter) {
            throw new IllegalStateException("broken listener");
          }

          @Override
          public void turn(Turn turn) {
            throw new IllegalStateException("broken listener");
          }

          @Override
          public void throttled(String destination, int multiplier) {
            throw new IllegalStateException("broken listener");
          }

          @Override
          public void lockedOut(String destination, String reason) {
            throw new IllegalStateException("broken listener");
          }
        };
    Recording heard = new Recording();
    registry.addListener(broken);
    registry.addListener(heard);
    DestinationLimiter limiter;
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    PrintStream originalErr = System.err;
    System.setErr(new PrintStream(log, true, StandardCharsets.UTF_8));
    try {
      limiter = registry.limiter(destination("a"));
      limiter.acquire().close();
      limiter.acquire().close();
      limiter.backoff();
      limiter.lockOut("HTTP 403");
    } finally {
      System.setErr(originalErr);
    }
    assertThat(
            log.toString(StandardCharsets.UTF_8)
                .lines()
                .filter(l -> l.contains("WARN") && l.contains("listener") && l.contains("threw")))
        .as("five failures, one WARN")
        .hasSize(1);
    assertThat(time.sleepsMillis()).containsExactly(0L, 100L);
    assertThat(heard.turns).hasSize(2);
    assertThat(heard.throttled).containsExactly("a x2");
    assertThat(heard.lockouts).containsExactly("a: HTTP 403");
    assertThatThrownBy(limiter::acquire).isInstanceOf(LockedOutException.class);
    assertThat(limiter.availablePermits()).isEqualTo(1);
  }

  @Test
  void theRegistryTellsWhetherItsCursorIsLatched() {
    assertThat(registry.isCursorLatched()).isFalse();
    LimiterRegistry latched =
        new LimiterRegistry(
            new UnavailableCursor() {
              @Override
              public boolean isLatched() {
                return true;
              }
            },
            time);
    assertThat(latched.isCursorLatched()).isTrue();
  }

  /** Records what it hears. */
  private static final class Recording implements LimiterListener {
    final List<DestinationLimiter> created = new ArrayList<>();
    final List<Turn> turns = new ArrayList<>();
    final List<String> throttled = new ArrayList<>();
    final List<String> lockouts = new ArrayList<>();

    @Override
    public void limiterCreated(DestinationLimiter limiter) {
      created.add(limiter);
    }

    @Override
    public void turn(Turn turn) {
      turns.add(turn);
    }

    @Override
    public void throttled(String destination, int multiplier) {
      throttled.add(destination + " x" + multiplier);
    }

    @Override
    public void lockedOut(String destination, String reason) {
      lockouts.add(destination + ": " + reason);
    }
  }

  /** A store that cannot be reached. */
  private static class UnavailableCursor implements Cursor {
    @Override
    public Reservation reserve(String name, Duration interval, Duration notBefore) {
      return Reservation.unavailable();
    }

    @Override
    public Reservation tryReserve(
        String name, Duration interval, Duration notBefore, Duration maxWait) {
      return Reservation.unavailable();
    }

    @Override
    public void clear(String name) {}
  }
}
