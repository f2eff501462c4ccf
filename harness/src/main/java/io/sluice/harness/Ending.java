package io.sluice.harness;

/** How a logical request of a load run ended. */
enum Ending {
  COMPLETED,
  DEADLINE,
  CANCELLED,
  REFUSED,
  ERROR
}
