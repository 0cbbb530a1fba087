package dev.pacer.cli.run;

import java.util.List;

/**
 * A fetch thread's claim whose answer has not come (PostgreSQL was away): the lease tokens it asked
 * under, made again with the same tokens so that items a lost answer leased are answered, not left
 * leased to nobody until their leases run out ({@link dev.pacer.cli.db.ItemStore}'s class comment).
 */
final class ThreadClaims {
  List<String> tokens = List.of();
}
