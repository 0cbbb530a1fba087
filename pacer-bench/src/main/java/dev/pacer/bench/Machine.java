package dev.pacer.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** What the run ran on, read off the machine and the server. */
record Machine(
    int cores,
    long memoryBytes,
    String cpuModel,
    String os,
    String jvm,
    String postgresqlVersion,
    String serverSynchronousCommitDefault,
    String serverFsync,
    boolean embeddedServer,
    double[] loadAverageAtStart,
    double[] loadAverageAtEnd) {

  static String readCpuModel() {
    return firstValue(Path.of("/proc/cpuinfo"), "model name", "unknown");
  }

  static long readMemoryBytes() {
    String kb = firstValue(Path.of("/proc/meminfo"), "MemTotal", "0 kB").replace("kB", "").trim();
    return Long.parseLong(kb) * 1024;
  }

  /** The 1, 5 and 15 minute load averages from /proc/loadavg (zeros where unavailable). */
  static double[] loadAverage() {
    try {
      String[] parts = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return new double[] {
        Double.parseDouble(parts[0]), Double.parseDouble(parts[1]), Double.parseDouble(parts[2])
      };
    } catch (IOException | RuntimeException e) {
      return new double[3];
    }
  }

  static String readOs() {
    return System.getProperty("os.name")
        + " "
        + System.getProperty("os.version")
        + " ("
        + System.getProperty("os.arch")
        + ")";
  }

  static String readJvm() {
    return System.getProperty("java.vm.name")
        + " "
        + System.getProperty("java.runtime.version")
        + " ("
        + System.getProperty("java.vm.vendor")
        + ")";
  }

  Map<String, Object> toJson() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("cores", cores);
    m.put("memory_bytes", memoryBytes);
    m.put("memory_gib", Math.round(memoryBytes / (1024.0 * 1024 * 1024) * 10) / 10.0);
    m.put("cpu_model", cpuModel);
    m.put("os", os);
    m.put("jvm", jvm);
    m.put("postgresql_version", postgresqlVersion);
    m.put("server_synchronous_commit_default", serverSynchronousCommitDefault);
    m.put("server_fsync", serverFsync);
    m.put("embedded_server", embeddedServer);
    m.put(
        "load_average_at_start",
        List.of(loadAverageAtStart[0], loadAverageAtStart[1], loadAverageAtStart[2]));
    m.put(
        "load_average_at_end",
        List.of(loadAverageAtEnd[0], loadAverageAtEnd[1], loadAverageAtEnd[2]));
    return m;
  }

  private static String firstValue(Path file, String field, String fallback) {
    try {
      for (String line : Files.readAllLines(file)) {
        if (line.startsWith(field)) {
          return line.substring(line.indexOf(':') + 1).trim();
        }
      }
    } catch (IOException e) {
      return fallback;
    }
    return fallback;
  }
}
