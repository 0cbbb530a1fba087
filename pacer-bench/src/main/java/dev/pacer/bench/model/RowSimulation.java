package dev.pacer.bench.model;

import java.util.ArrayDeque;
import java.util.PriorityQueue;
import java.util.SplittableRandom;
import java.util.function.Consumer;

/**
 * A discrete-event simulation of processes reserving turns on the rows of PostgreSQL that hold
 * their destinations' cursors: what one row can carry, and what it costs the server, as the
 * processes multiply.
 *
 * <p><b>What a statement is.</b> A process has one connection for its reservations and {@code
 * callersPerProcess} callers. A caller that finds no leased turn in hand queues; when the
 * connection is free, one statement takes every caller queued then (the combining of {@code
 * StatementLane}) and reserves {@code max(callers, leaseTurns)} turns: a lease of {@code k} turns
 * gives the turns no caller is waiting for yet to the process's stock, from which later callers
 * take one without a statement. A statement is, in order:
 *
 * <ol>
 *   <li>the client's work ({@code clientMicros} of CPU), then half the network round trip;
 *   <li>the server's work before the row: waking the backend ({@code switchMicros}), then {@code (1
 *       - lockedShare) × serverMicros} (parse, bind, the index lookup);
 *   <li>the row's lock, first come first served: a statement that finds the row held waits, and is
 *       handed the row when the one before it releases it: its backend is woken ({@code
 *       switchMicros}) and re-reads the row's newest version ({@code recheckMicros}), the row its
 *       own all the while;
 *   <li>the server's work with the row held ({@code lockedShare × serverMicros}: the update, the
 *       commit record, the lock's release), then the other half of the round trip.
 * </ol>
 *
 * <p><b>The turns.</b> With the row held, a statement takes its turns as the reservation does:
 * {@code first = max(now, next)}, turn {@code i} at {@code first + i × gapMicros}, {@code next}
 * moved past the last. Its callers go at their turns, or at once if the answer came back after
 * them. A leased turn may be taken as late as the statement's first turn was, and no later: past
 * that it is given up, never sent late, and its place in the destination's timeline is lost.
 *
 * <p><b>The cores.</b> Every piece of work runs on one of {@code cores} cores, first come first
 * served, the client's too when {@code clientsOnServerCores} (one machine for everything, as in
 * {@code ./bench}); otherwise each client has a core of its own. Work handed to a machine whose
 * cores are all idle starts {@code idleWakeMicros} later (a core's wake-up from an idle state),
 * work handed to a machine with a core running starts at once on a free core, and queues when none
 * is free. A statement that holds the row and waits for a core holds the row the whole time: this
 * is why one row carries less on a saturated machine than the same statements on many rows.
 *
 * <p>Time is simulated, never waited for: a run of a simulated second takes milliseconds and is the
 * same every time for the same inputs.
 */
public final class RowSimulation {

  /**
   * What the simulation is run with.
   *
   * @param processes processes, each with one connection for its reservations
   * @param callersPerProcess callers of one process that ask for turns
   * @param rows rows the processes' statements go to: 1 for one destination (a hot key); more
   *     spreads statement {@code i} of process {@code p} over row {@code (p + i) mod rows}
   * @param cores the server's cores
   * @param clientsOnServerCores whether the clients' work runs on the server's cores too
   * @param clientMicros the client's CPU time per statement
   * @param serverMicros the server's CPU time per statement
   * @param lockedShare the part of {@code serverMicros} run with the row held, 0 to 1
   * @param recheckMicros CPU time a statement that waited for the row spends re-reading it
   * @param idleWakeMicros delay before work handed to a machine with every core idle starts
   * @param switchMicros CPU time the server's core spends handing work to a backend that waits: the
   *     statement's arrival, and the row's hand-over to the next statement waiting for it
   * @param networkMicros the network round trip, not on any core
   * @param leaseTurns turns a statement reserves at least (1: no lease)
   * @param thinkMicros a caller's time from a turn to its next ask (0: always asking)
   * @param gapMicros the destination's interval between turns, fleet-wide (0: no ceiling)
   */
  public record Inputs(
      int processes,
      int callersPerProcess,
      int rows,
      int cores,
      boolean clientsOnServerCores,
      double clientMicros,
      double serverMicros,
      double lockedShare,
      double recheckMicros,
      double idleWakeMicros,
      double switchMicros,
      double networkMicros,
      int leaseTurns,
      double thinkMicros,
      double gapMicros) {

    /** Validates the inputs, naming the bad value. */
    public Inputs {
      if (processes < 1 || callersPerProcess < 1 || rows < 1 || cores < 1 || leaseTurns < 1) {
        throw new IllegalArgumentException(
            "processes, callers, rows, cores and lease turns must be at least 1: " + this);
      }
      if (lockedShare < 0 || lockedShare > 1) {
        throw new IllegalArgumentException("lockedShare must be in [0, 1]: " + lockedShare);
      }
      if (clientMicros < 0
          || serverMicros <= 0
          || recheckMicros < 0
          || idleWakeMicros < 0
          || switchMicros < 0
          || networkMicros < 0
          || thinkMicros < 0
          || gapMicros < 0) {
        throw new IllegalArgumentException("times must be >= 0 (server time > 0): " + this);
      }
    }

    public Inputs withRows(int n) {
      return new Inputs(
          processes,
          callersPerProcess,
          n,
          cores,
          clientsOnServerCores,
          clientMicros,
          serverMicros,
          lockedShare,
          recheckMicros,
          idleWakeMicros,
          switchMicros,
          networkMicros,
          leaseTurns,
          thinkMicros,
          gapMicros);
    }

    public Inputs withClientMicros(double micros) {
      return new Inputs(
          processes,
          callersPerProcess,
          rows,
          cores,
          clientsOnServerCores,
          micros,
          serverMicros,
          lockedShare,
          recheckMicros,
          idleWakeMicros,
          switchMicros,
          networkMicros,
          leaseTurns,
          thinkMicros,
          gapMicros);
    }

    public Inputs withServer(double micros, double share, double recheck) {
      return new Inputs(
          processes,
          callersPerProcess,
          rows,
          cores,
          clientsOnServerCores,
          clientMicros,
          micros,
          share,
          recheck,
          idleWakeMicros,
          switchMicros,
          networkMicros,
          leaseTurns,
          thinkMicros,
          gapMicros);
    }

    public Inputs withLease(int turns) {
      return new Inputs(
          processes,
          callersPerProcess,
          rows,
          cores,
          clientsOnServerCores,
          clientMicros,
          serverMicros,
          lockedShare,
          recheckMicros,
          idleWakeMicros,
          switchMicros,
          networkMicros,
          turns,
          thinkMicros,
          gapMicros);
    }

    public Inputs withGap(double micros) {
      return new Inputs(
          processes,
          callersPerProcess,
          rows,
          cores,
          clientsOnServerCores,
          clientMicros,
          serverMicros,
          lockedShare,
          recheckMicros,
          idleWakeMicros,
          switchMicros,
          networkMicros,
          leaseTurns,
          thinkMicros,
          micros);
    }

    public Inputs withCallers(int callers, double think) {
      return new Inputs(
          processes,
          callers,
          rows,
          cores,
          clientsOnServerCores,
          clientMicros,
          serverMicros,
          lockedShare,
          recheckMicros,
          idleWakeMicros,
          switchMicros,
          networkMicros,
          leaseTurns,
          think,
          gapMicros);
    }
  }

  /**
   * What a run delivered over its measured part.
   *
   * @param permitsPerSecond turns handed to callers
   * @param statementsPerSecond reservation statements completed
   * @param serverCpuShare the server's CPU time ÷ (cores × time): 1 is every core busy with it
   * @param busiestRowShare the time the busiest row was held ÷ time: 1 is a row that never rests
   * @param meanWaitMicros a caller's mean time from its ask to its turn
   * @param givenUpPerSecond leased turns given up unused, their time past before a caller asked
   * @param meanInServer statements in the server at once, on average, from their arrival to the
   *     row's release: the server connections a transaction pooler keeps busy
   */
  public record Result(
      double permitsPerSecond,
      double statementsPerSecond,
      double serverCpuShare,
      double busiestRowShare,
      double meanWaitMicros,
      double givenUpPerSecond,
      double meanInServer) {

    /** Statements per permit: 1 with neither combining nor leases. */
    public double statementsPerPermit() {
      return statementsPerSecond / permitsPerSecond;
    }
  }

  private record Event(double at, long seq, Runnable action) {}

  private final Inputs in;
  private final PriorityQueue<Event> events =
      new PriorityQueue<>(
          (a, b) -> a.at != b.at ? Double.compare(a.at, b.at) : Long.compare(a.seq, b.seq));
  private final Cores cores;
  private final Row[] rows;
  private long seq;
  private double now;
  private boolean measuring;
  private long permits;
  private long statements;
  private long givenUp;
  private int inServer;
  private double inServerSince;
  private double inServerArea;
  private double serverBusy;
  private double waitSum;
  private long waits;

  private RowSimulation(Inputs in) {
    this.in = in;
    this.cores = new Cores(in.cores());
    this.rows = new Row[in.rows()];
    for (int i = 0; i < rows.length; i++) {
      rows[i] = new Row();
    }
  }

  /** Runs {@code in} for {@code warmupMicros}, then measures {@code measureMicros}. */
  public static Result run(Inputs in, double warmupMicros, double measureMicros) {
    return new RowSimulation(in).simulate(warmupMicros, measureMicros);
  }

  private Result simulate(double warmupMicros, double measureMicros) {
    for (int p = 0; p < in.processes(); p++) {
      Process process = new Process(p);
      // Processes start a little apart, as real ones do, not all in one instant.
      at(p * 0.37, process::start);
    }
    drainUntil(warmupMicros);
    measuring = true;
    for (Row r : rows) {
      r.startMeasuring(now);
    }
    drainUntil(warmupMicros + measureMicros);
    double seconds = measureMicros / 1e6;
    double busiestRow = 0;
    for (Row r : rows) {
      busiestRow = Math.max(busiestRow, r.heldMicros(now) / measureMicros);
    }
    return new Result(
        permits / seconds,
        statements / seconds,
        serverBusy / (in.cores() * measureMicros),
        busiestRow,
        waits == 0 ? 0 : waitSum / waits,
        givenUp / seconds,
        inServerArea(now) / measureMicros);
  }

  /** A statement arrives at the server ({@code +1}) or leaves it ({@code -1}). */
  private void inServer(int change) {
    inServerArea(now);
    inServer += change;
  }

  private double inServerArea(double time) {
    if (measuring) {
      inServerArea += inServer * (time - inServerSince);
    }
    inServerSince = time;
    return inServerArea;
  }

  private void drainUntil(double end) {
    while (!events.isEmpty() && events.peek().at() <= end) {
      Event e = events.poll();
      now = e.at();
      e.action().run();
    }
    now = end;
  }

  private void at(double time, Runnable action) {
    events.add(new Event(time, seq++, action));
  }

  private void after(double micros, Runnable action) {
    at(now + micros, action);
  }

  private void server(double micros, Runnable then) {
    cores.run(micros, true, then);
  }

  private void client(double micros, Runnable then) {
    if (in.clientsOnServerCores()) {
      cores.run(micros, false, then);
    } else {
      after(micros, then);
    }
  }

  /** The cores, first come first served; an idle machine wakes before it starts. */
  private final class Cores {
    private record Work(double micros, boolean server, Runnable then) {}

    private final ArrayDeque<Work> queue = new ArrayDeque<>();
    private final int count;
    private int idle;
    private boolean handedOn;

    Cores(int count) {
      this.count = count;
      this.idle = count;
    }

    /**
     * Work of another process: a free core, after a wake-up if the machine was idle, or the queue.
     */
    void run(double micros, boolean server, Runnable then) {
      if (idle > 0) {
        double wake = idle == count ? in.idleWakeMicros() : 0;
        idle--;
        start(new Work(micros, server, then), wake);
      } else {
        queue.add(new Work(micros, server, then));
      }
    }

    /**
     * More work of the process whose work just ended, called from that work's continuation: it goes
     * on on the same core, as a process that has not blocked keeps its core.
     */
    void keep(double micros, boolean server, Runnable then) {
      handedOn = true;
      start(new Work(micros, server, then), 0);
    }

    private void start(Work w, double wake) {
      after(
          wake + w.micros(),
          () -> {
            if (w.server() && measuring) {
              serverBusy += w.micros();
            }
            handedOn = false;
            w.then().run();
            if (!handedOn) {
              Work next = queue.poll();
              if (next != null) {
                start(next, 0);
              } else {
                idle++;
              }
            }
            handedOn = false;
          });
    }
  }

  /** A row's lock: one holder, the others in the order they came. */
  private final class Row {
    private final ArrayDeque<Consumer<Boolean>> waiters = new ArrayDeque<>();
    private boolean held;
    private double next;
    private double heldSince;
    private double heldMicros;
    private double measuredFrom;

    void acquire(Consumer<Boolean> withRow) {
      if (held) {
        waiters.add(withRow);
      } else {
        held = true;
        heldSince = now;
        withRow.accept(false);
      }
    }

    /**
     * Takes {@code turns.length} consecutive turns, as the reservation's {@code next = max(now,
     * next) + k × gap} does.
     */
    void reserve(double[] turns) {
      double first = Math.max(now, next);
      for (int i = 0; i < turns.length; i++) {
        turns[i] = first + i * in.gapMicros();
      }
      next = first + turns.length * in.gapMicros();
    }

    void release() {
      Consumer<Boolean> next = waiters.poll();
      if (next != null) {
        next.accept(true);
      } else {
        held = false;
        heldMicros += now - Math.max(heldSince, measuredFrom);
      }
    }

    void startMeasuring(double time) {
      measuredFrom = time;
      heldMicros = 0;
    }

    double heldMicros(double end) {
      return heldMicros + (held ? end - Math.max(heldSince, measuredFrom) : 0);
    }
  }

  /** A leased turn, and the last moment it may still be taken. */
  private record Leased(double turn, double last) {}

  /** One process: its callers, its connection, and the turns it holds leased. */
  private final class Process {
    private final int index;
    private final ArrayDeque<Double> asked = new ArrayDeque<>();
    private final ArrayDeque<Leased> leased = new ArrayDeque<>();
    private boolean inFlight;
    private long made;

    Process(int index) {
      this.index = index;
    }

    /**
     * The callers' first asks, each at a point of its first request drawn from a seeded random:
     * callers of a real fleet are not in step, and the same inputs give the same answer.
     */
    void start() {
      SplittableRandom random = new SplittableRandom(index);
      for (int c = 0; c < in.callersPerProcess(); c++) {
        after(random.nextDouble() * in.thinkMicros(), this::ask);
      }
    }

    void ask() {
      Double turn = leasedTurn();
      if (turn != null) {
        grant(now, turn);
      } else {
        asked.add(now);
        if (!inFlight) {
          statement();
        }
      }
    }

    /**
     * The next leased turn not past its last moment; those past it are given up, never sent late.
     */
    private Double leasedTurn() {
      while (!leased.isEmpty() && leased.peek().last() < now) {
        leased.poll();
        if (measuring) {
          givenUp++;
        }
      }
      Leased next = leased.poll();
      return next == null ? null : next.turn();
    }

    /** The caller that asked at {@code askedAt} goes at {@code turn}, and asks again later. */
    private void grant(double askedAt, double turn) {
      double at = Math.max(now, turn);
      at(
          at,
          () -> {
            if (measuring) {
              permits++;
              waitSum += now - askedAt;
              waits++;
            }
            after(in.thinkMicros(), this::ask);
          });
    }

    private void statement() {
      inFlight = true;
      ArrayDeque<Double> group = new ArrayDeque<>(asked);
      asked.clear();
      Row row = rows[(int) ((index + made++) % rows.length)];
      double locked = in.lockedShare() * in.serverMicros();
      double[] turns = new double[Math.max(group.size(), in.leaseTurns())];
      Runnable withRow =
          () -> {
            row.reserve(turns);
            cores.keep(
                locked,
                true,
                () -> {
                  row.release();
                  inServer(-1);
                  after(in.networkMicros() / 2, () -> done(group, turns));
                });
          };
      client(
          in.clientMicros(),
          () ->
              after(
                  in.networkMicros() / 2,
                  () -> {
                    inServer(+1);
                    server(
                        in.switchMicros() + in.serverMicros() - locked,
                        () ->
                            row.acquire(
                                waited -> {
                                  if (waited) {
                                    server(in.switchMicros() + in.recheckMicros(), withRow);
                                  } else {
                                    withRow.run();
                                  }
                                }));
                  }));
    }

    private void done(ArrayDeque<Double> group, double[] turns) {
      if (measuring) {
        statements++;
      }
      int t = 0;
      for (double askedAt : group) {
        grant(askedAt, turns[t++]);
      }
      // The statement's answer came back this late after its first turn: its leased turns may be
      // taken as late as that, as its callers' were, and no later.
      double lag = Math.max(0, now - turns[0]);
      while (t < turns.length) {
        leased.add(new Leased(turns[t], turns[t] + lag));
        t++;
      }
      inFlight = false;
      // Callers that queued while the statement ran take leased turns first.
      while (!asked.isEmpty()) {
        Double turn = leasedTurn();
        if (turn == null) {
          statement();
          return;
        }
        grant(asked.poll(), turn);
      }
    }
  }
}
