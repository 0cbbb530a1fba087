package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.db.RequestLog;
import dev.pacer.cli.model.HaltReason;
import dev.pacer.cli.model.LimiterFigures;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class SummaryTest {

  private static final RequestLog.DoorFigures DOOR =
      new RequestLog.DoorFigures(70, 9.857, 6.9, 8, 1.25, 7.5, 12.0);
  private static final LimiterFigures LIMITER =
      new LimiterFigures(60, 10, 3, 7_000_000_000L, 450_000_000L, 2, 1, 4, false, true);

  @Test
  void isOneLineOfJsonWithEveryField() {
    String json =
        new Summary("job-1", 10, 2, 3, 5, 4, Optional.empty(), 12.3456, 7, DOOR, LIMITER).toJson();
    assertThat(json)
        .isEqualTo(
            "{\"job\":\"job-1\",\"done\":10,\"failed\":2,\"deferred\":3,"
                + "\"skipped\":5,\"pending\":4,\"lockedOut\":false,\"haltedBar\":null,\"elapsedSeconds\":12.346,"
                + "\"ceilingPerSecond\":7.000,\"requestsAtDestination\":70,"
                + "\"achievedRatePerSecond\":6.900,\"busiestOneSecondWindow\":8,"
                + "\"latenessP50Millis\":1.250,\"latenessP99Millis\":7.500,\"latenessMaxMillis\":12.000,"
                + "\"turnsShared\":60,\"turnsDegraded\":10,\"turnsRefused\":3,"
                + "\"acquireWaitMeanMillis\":100.000,\"acquireWaitMaxMillis\":450.000,"
                + "\"throttled\":2,\"lockouts\":1,\"backoffMultiplier\":4,\"pacingLocally\":false,"
                + "\"cursorLatched\":true}");
  }

  @Test
  void escapesStringsAndNamesTheBar() {
    String json =
        new Summary(
                "a\"b\\c\n",
                0,
                0,
                0,
                0,
                0,
                Optional.of(HaltReason.DESTINATION_LOCKOUT),
                1,
                7,
                RequestLog.DoorFigures.NONE,
                LimiterFigures.NONE)
            .toJson();
    assertThat(json)
        .contains(
            "\"job\":\"a\\\"b\\\\c\\n\"",
            "\"lockedOut\":true",
            "\"haltedBar\":\"DESTINATION_LOCKOUT\"");
    assertThat(json).doesNotContain("\n");
  }

  @Test
  void theVerdictIsTheCeilingPlusOneInTheBusiestWindow() {
    assertThat(Summary.describe(DOOR, 7))
        .contains("busiest 1-s window 8", "kept", "p50 1.3 ms", "p99 7.5 ms", "max 12.0 ms");
    RequestLog.DoorFigures over = new RequestLog.DoorFigures(70, 9.857, 6.9, 9, 1, 2, 3);
    assertThat(Summary.describe(over, 7)).contains("busiest 1-s window 9", "EXCEEDED");
    assertThat(Summary.describe(RequestLog.DoorFigures.NONE, 7)).isEqualTo("no request sent");
  }

  @Test
  void theLimiterFiguresReadForPeopleAndAddUpOverWorkers() {
    assertThat(LIMITER.describe())
        .isEqualTo(
            "70 turn(s): 60 shared, 10 degraded (paced locally), 3 refused; wait for a turn mean"
                + " 100.0 ms, max 450.0 ms; 2 throttled, 1 lockout(s); at the end backoff x4,"
                + " CURSOR LATCHED");
    LimiterFigures other =
        new LimiterFigures(30, 0, 1, 3_000_000_000L, 900_000_000L, 0, 1, 2, true, false);
    assertThat(LIMITER.plus(other))
        .isEqualTo(
            new LimiterFigures(90, 10, 4, 10_000_000_000L, 900_000_000L, 2, 2, 4, true, true));
    assertThat(LimiterFigures.NONE.describe())
        .isEqualTo(
            "0 turn(s): 0 shared, 0 degraded (paced"
                + " locally), 0 refused; wait for a turn mean 0.0 ms, max 0.0 ms; 0 throttled,"
                + " 0 lockout(s); at the end backoff x1");
  }
}
