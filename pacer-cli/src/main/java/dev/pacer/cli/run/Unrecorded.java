package dev.pacer.cli.run;

import dev.pacer.cli.db.ItemStore;

/**
 * A fetch thread's last fetched item whose outcome is still to be recorded (the job's queue): its
 * next claim records it in the same statement ({@link ItemStore#recordAndClaim}). Its lease token
 * stays among those the heartbeat extends until then.
 */
final class Unrecorded {
  ItemStore.Done done;
}
