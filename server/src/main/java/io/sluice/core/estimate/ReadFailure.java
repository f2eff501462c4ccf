package io.sluice.core.estimate;

/**
 * Internal control flow: the body cannot be read as its format; carries a {@link FallbackCause}.
 * Stackless and preallocated, so a hostile body costs no stack walks.
 */
@SuppressWarnings("StaticAssignmentOfThrowable") // preallocated and stackless on purpose (above)
final class ReadFailure extends RuntimeException {
  private static final long serialVersionUID = 1L;

  static final ReadFailure WRONG_TYPE = new ReadFailure(FallbackCause.WRONG_TYPE);
  static final ReadFailure TOO_DEEP = new ReadFailure(FallbackCause.TOO_DEEP);
  static final ReadFailure TRUNCATED = new ReadFailure(FallbackCause.TRUNCATED);
  static final ReadFailure NOT_JSON = new ReadFailure(FallbackCause.NOT_JSON);

  private final String cause;

  private ReadFailure(String cause) {
    super(cause, null, false, false);
    this.cause = cause;
  }

  String fallbackCause() {
    return cause;
  }
}
