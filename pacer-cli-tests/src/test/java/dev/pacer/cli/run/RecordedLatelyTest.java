package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.db.ItemStore;
import dev.pacer.testing.FakeTime;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class RecordedLatelyTest {

  private final FakeTime time = new FakeTime();

  private static ItemStore.Done done(String token) {
    ItemStore.Item item =
        new ItemStore.Item("job", "key-" + token, "http://127.0.0.1/" + token, 0, 0, token);
    return new ItemStore.Done(item, 200, "/" + token, 1);
  }

  private static List<String> tokens(List<ItemStore.Done> dones) {
    return dones.stream().map(d -> d.item().token()).toList();
  }

  @Test
  void keepsTheOutcomesOfTheLastFiveSecondsAtMostTheMost() {
    RecordedLately lately = new RecordedLately(3, time);
    lately.add(done("a"));
    time.advance(Duration.ofMillis(1_000));
    lately.add(done("b"));
    time.advance(Duration.ofMillis(4_500));
    lately.add(done("c"));
    assertThat(tokens(lately.outcomes())).containsExactly("b", "c");
    lately.add(done("d"));
    lately.add(done("e"));
    assertThat(tokens(lately.outcomes())).containsExactly("c", "d", "e");
  }

  @Test
  void whatWasKeptWhenTheOutageBeganWaitsUntilItIsRecordedAgain() {
    RecordedLately lately = new RecordedLately(100, time);
    lately.add(done("a"));
    lately.add(done("b"));
    assertThat(lately.setAsideOutcomes()).isEmpty();
    lately.setAside();
    time.advance(Duration.ofSeconds(30));
    lately.setAside();
    // Records made after the return push the kept ones out, not those set aside.
    lately.add(done("c"));
    assertThat(tokens(lately.outcomes())).containsExactly("c");
    List<ItemStore.Done> again = lately.setAsideOutcomes();
    assertThat(tokens(again)).containsExactly("a", "b");
    lately.recordedAgain(again);
    assertThat(lately.setAsideOutcomes()).isEmpty();
  }

  @Test
  void keepingNoneKeepsNone() {
    RecordedLately lately = new RecordedLately(0, time);
    lately.add(done("a"));
    assertThat(lately.outcomes()).isEmpty();
  }
}
