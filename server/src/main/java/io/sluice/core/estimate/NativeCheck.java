package io.sluice.core.estimate;

/**
 * A request's cross-check of Envoy's native AI metadata against Sluice's own reading, the note the
 * session emits for the metrics ({@code sluice_native_metadata_total{kind,status,agreement}}).
 *
 * @param kind {@link #REQUEST_INFO} or {@link #TOKEN_USAGE}
 * @param status the record's state: {@code declared} (request info), or the token usage's
 *     extraction status ({@code complete}, {@code partial}, {@code failed})
 * @param agreement {@link #AGREE}, {@link #DISAGREE}, {@link #UNCHECKED} (Sluice has no reading of
 *     its own: headers-only, or a response without usage) or {@link #UNUSED} (the record carried no
 *     usable count)
 * @param used whether the record was preferred (the estimate or charge came from it)
 */
public record NativeCheck(String kind, String status, String agreement, boolean used) {
  public static final String REQUEST_INFO = "request_info";
  public static final String TOKEN_USAGE = "token_usage";
  public static final String DECLARED = "declared";
  public static final String AGREE = "agree";
  public static final String DISAGREE = "disagree";
  public static final String UNCHECKED = "unchecked";
  public static final String UNUSED = "unused";
}
