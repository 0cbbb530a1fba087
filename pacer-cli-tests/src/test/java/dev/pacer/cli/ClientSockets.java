package dev.pacer.cli;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Which process holds a TCP connection to a server port, read from Linux's {@code /proc}: the
 * kernel's socket tables give each connection's local port and socket inode, and a process's file
 * descriptors name the inodes of its sockets. {@code pg_stat_activity.client_port} is the client's
 * local port, so a backend can be traced to the process on this machine that opened it.
 */
final class ClientSockets {

  private static final Path PROC = Path.of("/proc");
  private static final Pattern SOCKET = Pattern.compile("socket:\\[(\\d+)]");

  private ClientSockets() {}

  /** Whether this machine has the tables (Linux). */
  static boolean available() {
    return Files.isReadable(PROC.resolve("net/tcp")) && Files.isDirectory(PROC.resolve("self/fd"));
  }

  /**
   * The process among {@code pids} holding each connection to {@code serverPort}, by the client's
   * local port. A connection closed meanwhile, or held by another process, is absent.
   */
  static Map<Integer, Long> ownersByClientPort(int serverPort, Set<Long> pids) {
    Map<Long, Integer> portByInode = new HashMap<>();
    for (String table : List.of("net/tcp", "net/tcp6")) {
      Path file = PROC.resolve(table);
      if (!Files.isReadable(file)) {
        continue;
      }
      for (String line : lines(file)) {
        String[] f = line.trim().split("\\s+");
        if (f.length < 10 || !f[1].contains(":") || !f[2].contains(":")) {
          continue; // the header
        }
        int local = port(f[1]);
        int remote = port(f[2]);
        long inode = Long.parseLong(f[9]);
        if (remote == serverPort && inode != 0) {
          portByInode.put(inode, local);
        }
      }
    }
    Map<Integer, Long> owners = new HashMap<>();
    for (long pid : pids) {
      try (DirectoryStream<Path> fds = Files.newDirectoryStream(PROC.resolve(pid + "/fd"))) {
        for (Path fd : fds) {
          OptionalLong inode = socketInode(fd);
          if (inode.isPresent() && portByInode.containsKey(inode.getAsLong())) {
            owners.put(portByInode.get(inode.getAsLong()), pid);
          }
        }
      } catch (IOException e) {
        // The process has exited: it holds nothing.
      }
    }
    return owners;
  }

  private static OptionalLong socketInode(Path fd) {
    try {
      Matcher m = SOCKET.matcher(Files.readSymbolicLink(fd).toString());
      return m.matches() ? OptionalLong.of(Long.parseLong(m.group(1))) : OptionalLong.empty();
    } catch (IOException e) {
      return OptionalLong.empty(); // closed while listed
    }
  }

  /** The port of a {@code /proc/net/tcp} address, {@code HEXADDR:HEXPORT}. */
  private static int port(String address) {
    return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1), 16);
  }

  private static List<String> lines(Path file) {
    try {
      return Files.readAllLines(file);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
