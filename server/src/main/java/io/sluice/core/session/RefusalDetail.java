package io.sluice.core.session;

import java.util.Map;

/**
 * What a refusal tells the client beyond its reason: a check that refuses with a hold ({@link
 * AdmissionCheck.Held#refusal()}) notes one ({@link AdmissionCheck.Held#note()}), and the front end
 * adds it to the refusal it answers (say, a spent budget's name and when its period ends). An
 * immutable value; the first such note of a request counts ({@link RunningRequest#refusalDetail}).
 */
public interface RefusalDetail {
  /** Response headers (lower-case names) beside {@code x-sluice-reason}; empty: none. */
  Map<String, String> headers();

  /** String fields of the JSON {@code error} object beside its code and message; empty: none. */
  Map<String, String> fields();
}
