package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.db.RequestLog;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class SummaryTest {

  private static final RequestLog.DoorFigures DOOR =
      new RequestLog.DoorFigures(70, 9.857, 6.9, 8, 1.25, 7.5, 12.0);

  @Test
  void isOneLineOfJsonWithEveryField() {
    String json = new Summary("job-1", 10, 2, 3, 4, Optional.empty(), 12.3456, 7, DOOR).toJson();
    assertThat(json).isEqualTo("{\"job\":\"job-1\",\"done\":10,\"failed\":2,\"deferred\":3,"
        + "\"pending\":4,\"lockedOut\":false,\"haltedBar\":null,\"elapsedSeconds\":12.346,"
        + "\"ceilingPerSecond\":7.000,\"requestsAtDestination\":70,"
        + "\"achievedRatePerSecond\":6.900,\"busiestOneSecondWindow\":8,"
        + "\"latenessP50Millis\":1.250,\"latenessP99Millis\":7.500,\"latenessMaxMillis\":12.000}");
  }

  @Test
  void escapesStringsAndNamesTheBar() {
    String json = new Summary("a\"b\\c\n", 0, 0, 0, 0,
        Optional.of(HaltReason.DESTINATION_LOCKOUT), 1, 7,
        RequestLog.DoorFigures.NONE).toJson();
    assertThat(json).contains("\"job\":\"a\\\"b\\\\c\\n\"", "\"lockedOut\":true",
        "\"haltedBar\":\"DESTINATION_LOCKOUT\"");
    assertThat(json).doesNotContain("\n");
  }

  @Test
  void theVerdictIsTheCeilingPlusOneInTheBusiestWindow() {
    assertThat(Summary.describe(DOOR, 7)).contains("busiest 1-s window 8", "kept",
        "p50 1.3 ms", "p99 7.5 ms", "max 12.0 ms");
    RequestLog.DoorFigures over = new RequestLog.DoorFigures(70, 9.857, 6.9, 9, 1, 2, 3);
    assertThat(Summary.describe(over, 7)).contains("busiest 1-s window 9", "EXCEEDED");
    assertThat(Summary.describe(RequestLog.DoorFigures.NONE, 7)).isEqualTo("no request sent");
  }
}
