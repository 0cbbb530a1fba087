/**
 * The fleet-wide cursor in PostgreSQL. Only {@code dev.pacer.postgres} is API; {@code
 * dev.pacer.postgres.internal} (the statement's SQL, identifier checks) may change in any release.
 */
@SuppressWarnings("requires-automatic") // pgjdbc names its module in its manifest only
module dev.pacer.postgres {
  requires transitive dev.pacer.core;
  requires transitive java.sql;
  requires org.postgresql.jdbc;
  requires org.slf4j;

  exports dev.pacer.postgres;
}
