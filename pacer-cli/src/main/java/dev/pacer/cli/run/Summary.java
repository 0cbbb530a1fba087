package dev.pacer.cli.run;

import java.util.Locale;

/** The one-line JSON summary that ends the output of {@code pacer fetch}. */
public record Summary(String job, long done, long failed, long deferred, long pending,
    boolean lockedOut, String haltedBar, double elapsedSeconds, double achievedRatePerSecond) {

  public String toJson() {
    return "{\"job\":" + string(job)
        + ",\"done\":" + done
        + ",\"failed\":" + failed
        + ",\"deferred\":" + deferred
        + ",\"pending\":" + pending
        + ",\"lockedOut\":" + lockedOut
        + ",\"haltedBar\":" + (haltedBar == null ? "null" : string(haltedBar))
        + ",\"elapsedSeconds\":" + number(elapsedSeconds)
        + ",\"achievedRatePerSecond\":" + number(achievedRatePerSecond)
        + "}";
  }

  private static String number(double value) {
    if (!Double.isFinite(value)) {
      return "0";
    }
    return String.format(Locale.ROOT, "%.3f", value);
  }

  /** A JSON string literal. */
  static String string(String s) {
    StringBuilder out = new StringBuilder("\"");
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20 || c == 0x7f || c == 0x2028 || c == 0x2029) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.append('"').toString();
  }
}
