package dev.pacer.bench;

import dev.pacer.Printable;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** A small JSON writer for maps, lists, strings, numbers and booleans; pretty-printed. */
final class Json {

  private Json() {}

  static String write(Object value) {
    StringBuilder out = new StringBuilder();
    write(out, value, 0);
    return out.append('\n').toString();
  }

  private static void write(StringBuilder out, Object value, int indent) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof String s) {
      string(out, s);
    } else if (value instanceof Boolean b) {
      out.append(b);
    } else if (value instanceof Double d) {
      number(out, d);
    } else if (value instanceof Float f) {
      number(out, f.doubleValue());
    } else if (value instanceof Number n) {
      out.append(n.longValue());
    } else if (value instanceof double[] array) {
      out.append('[');
      for (int i = 0; i < array.length; i++) {
        out.append(i == 0 ? "" : ", ");
        number(out, array[i]);
      }
      out.append(']');
    } else if (value instanceof Map<?, ?> map) {
      if (map.isEmpty()) {
        out.append("{}");
        return;
      }
      out.append("{\n");
      Iterator<? extends Map.Entry<?, ?>> it = map.entrySet().iterator();
      while (it.hasNext()) {
        Map.Entry<?, ?> e = it.next();
        pad(out, indent + 2);
        string(out, String.valueOf(e.getKey()));
        out.append(": ");
        write(out, e.getValue(), indent + 2);
        out.append(it.hasNext() ? ",\n" : "\n");
      }
      pad(out, indent);
      out.append('}');
    } else if (value instanceof List<?> list) {
      out.append('[');
      for (int i = 0; i < list.size(); i++) {
        out.append(i == 0 ? "" : ", ");
        write(out, list.get(i), indent);
      }
      out.append(']');
    } else {
      throw new IllegalArgumentException("not JSON: " + value.getClass());
    }
  }

  private static void number(StringBuilder out, double d) {
    if (Double.isNaN(d) || Double.isInfinite(d)) {
      out.append("null");
    } else if (d == Math.rint(d) && Math.abs(d) < 1e15) {
      out.append((long) d);
    } else {
      out.append(
          String.format(Locale.ROOT, "%.4f", d).replaceAll("0+$", "").replaceAll("\\.$", ""));
    }
  }

  private static void string(StringBuilder out, String s) {
    out.append(Printable.json(s));
  }

  private static void pad(StringBuilder out, int n) {
    out.append(" ".repeat(n));
  }
}
