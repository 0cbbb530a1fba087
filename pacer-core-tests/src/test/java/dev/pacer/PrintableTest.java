package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PrintableTest {

  @Test
  void everyCharacterThatCanMoveTheCursorOrReorderTheTextIsEscaped() {
    assertThat(Printable.quote("a\u001b[2Jb")).isEqualTo("\"a\\u001b[2Jb\"");
    assertThat(Printable.quote("\u009b2J"))
        .as("C1 control sequence introducer")
        .isEqualTo("\"\\u009b2J\"");
    assertThat(Printable.quote("\u0085")).as("next line").isEqualTo("\"\\u0085\"");
    assertThat(Printable.quote("evil\u202egnp.exe"))
        .as("right-to-left override")
        .isEqualTo("\"evil\\u202egnp.exe\"");
    assertThat(Printable.quote("\u2066x\u2069")).as("isolates").isEqualTo("\"\\u2066x\\u2069\"");
    assertThat(Printable.quote("\u200f\u061c\u2028")).isEqualTo("\"\\u200f\\u061c\\u2028\"");
  }

  @Test
  void aTerminalGetsItsLinesAndTabsAndNothingElseThatMovesTheCursor() throws Exception {
    java.io.StringWriter seen = new java.io.StringWriter();
    try (java.io.Writer terminal = Printable.forTerminal(seen)) {
      terminal.write("a\tb\r\nc\u001b[2J\u0085\u202ed \"q\" \\ é\n");
      terminal.write('\u0007');
    }
    assertThat(seen.toString()).isEqualTo("a\tb\r\nc\\u001b[2J\\u0085\\u202ed \"q\" \\ é\n\\u0007");
  }

  @Test
  void printableTextIsKeptAndLongTextCut() {
    assertThat(Printable.quote("héllo wörld ✓ 日本")).isEqualTo("\"héllo wörld ✓ 日本\"");
    assertThat(Printable.quote("x".repeat(100))).isEqualTo("\"" + "x".repeat(80) + "...\"");
    assertThat(Printable.quote(null)).isEqualTo("null");
  }

  @Test
  void aJsonLiteralIsOneLineAndKeepsEveryOtherCharacter() {
    assertThat(Printable.json("a\"b\\c\n\r\t")).isEqualTo("\"a\\\"b\\\\c\\n\\r\\t\"");
    assertThat(Printable.json("\u0000\u001b\u007f\u2028\u2029"))
        .isEqualTo("\"\\u0000\\u001b\\u007f\\u2028\\u2029\"");
    assertThat(Printable.json("héllo ✓ " + "x".repeat(100)))
        .as("not cut, and nothing printable escaped")
        .isEqualTo("\"héllo ✓ " + "x".repeat(100) + "\"");
  }
}
