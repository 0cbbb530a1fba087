package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class SummaryTest {

  @Test
  void isOneLineOfJsonWithEveryField() {
    String json = new Summary("job-1", 10, 2, 3, 4, false, null, 12.3456, 6.9).toJson();
    assertThat(json).isEqualTo("{\"job\":\"job-1\",\"done\":10,\"failed\":2,\"deferred\":3,"
        + "\"pending\":4,\"lockedOut\":false,\"haltedBar\":null,\"elapsedSeconds\":12.346,"
        + "\"achievedRatePerSecond\":6.900}");
  }

  @Test
  void escapesStringsAndNamesTheBar() {
    String json = new Summary("a\"b\\c\n", 0, 0, 0, 0, true, "DESTINATION_LOCKOUT", 1, 0).toJson();
    assertThat(json).contains("\"job\":\"a\\\"b\\\\c\\n\"", "\"lockedOut\":true",
        "\"haltedBar\":\"DESTINATION_LOCKOUT\"");
    assertThat(json).doesNotContain("\n");
  }
}
