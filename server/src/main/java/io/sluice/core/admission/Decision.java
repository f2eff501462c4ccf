package io.sluice.core.admission;

/** The answer of the admission core. Expected outcomes are values, not exceptions. */
public sealed interface Decision permits Decision.Admit, Decision.Reject {

  Reason reason();

  /** Run now; the permit must be released exactly once when the response ends. */
  record Admit(Permit permit) implements Decision {
    @Override
    public Reason reason() {
      return Reason.ADMITTED;
    }
  }

  /**
   * Refuse now.
   *
   * @param status HTTP status (429 for the caller's own share, 503 for saturation, 4xx for input)
   * @param retryAfterSeconds whole seconds, >= 1 for 429/503, 0 when retrying cannot help
   * @param message human-readable, never contains prompt text
   */
  record Reject(Reason reason, int status, long retryAfterSeconds, String message)
      implements Decision {}
}
