package io.sluice.core.mcp;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
import io.sluice.core.admission.Reason;
import io.sluice.core.session.AdmissionCheck;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * Refusals as JSON-RPC 2.0 error responses an MCP client SDK reads as the answer to its call: the
 * call's {@code id} (one error per request of a batch, in an array), a code in the server-error
 * range and {@code data} with the reason, whether a retry may succeed, when, and what to do.
 *
 * <pre>{@code
 * {"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"tool backpressure: ...",
 *   "data":{"type":"TOOL_BACKPRESSURE","reason":"queue_full","tool":"pdf_render",
 *           "retryable":true,"retry_after_ms":2000,
 *           "suggestion":"defer or drop, do not resubmit immediately"}}}
 * }</pre>
 *
 * A capacity refusal rides HTTP 200 ({@code application/json}, as any JSON-RPC response of the
 * streamable HTTP transport): an SDK hands a non-2xx answer to its caller as a transport failure,
 * not as the call's error. A body Sluice cannot read rides HTTP 400 with the id null.
 */
public final class JsonRpcErrors {
  /** A refusal a retry may cure later: the pool, its queue, the tenant's share. */
  public static final int TOOL_BACKPRESSURE = -32000;

  /** A refusal a retry of the same call cannot cure (its deadline, a budget, a bad request). */
  public static final int TOOL_REFUSED = -32001;

  /** What the error tells the agent to do with a retryable refusal. */
  public static final String SUGGESTION = "defer or drop, do not resubmit immediately";

  private JsonRpcErrors() {}

  /**
   * The answer to a call (or a batch) the pool or a check refused.
   *
   * @param ids the ids of the body's requests (JSON text)
   * @param batch whether to answer an array
   * @param tool the tool's metric label, or null (no tool call)
   */
  public static AdmissionCheck.Answered refusal(
      List<String> ids,
      boolean batch,
      String tool,
      Reason reason,
      long retryAfterSeconds,
      String message) {
    boolean retryable = reason.retryable() && retryAfterSeconds > 0;
    String data =
        "{\"type\":\""
            + (retryable ? "TOOL_BACKPRESSURE" : "TOOL_REFUSED")
            + "\",\"reason\":\""
            + reason.code()
            + "\",\"tool\":"
            + quote(tool)
            + ",\"retryable\":"
            + retryable
            + (retryable
                ? ",\"retry_after_ms\":"
                    + retryAfterSeconds * 1000
                    + ",\"suggestion\":"
                    + quote(SUGGESTION)
                : "")
            + "}";
    String error =
        "{\"code\":"
            + (retryable ? TOOL_BACKPRESSURE : TOOL_REFUSED)
            + ",\"message\":"
            + quote((retryable ? "tool backpressure: " : "tool call refused: ") + message)
            + ",\"data\":"
            + data
            + "}";
    Map<String, String> headers =
        retryAfterSeconds > 0 ? Map.of("retry-after", Long.toString(retryAfterSeconds)) : Map.of();
    return new AdmissionCheck.Answered(
        reason, 200, headers, responses(ids, batch, error), new McpNote(tool, reason.code()));
  }

  /**
   * The answer to a body that cannot be admitted as it is: to each request (HTTP 200) when their
   * ids are known (a batch of several calls, a bad tool name), else HTTP 400 with the id null.
   */
  public static AdmissionCheck.Answered invalid(
      JsonRpcScan.Problem problem, List<String> ids, boolean batch, String message) {
    String error =
        "{\"code\":"
            + problem.jsonRpcCode()
            + ",\"message\":"
            + quote(message)
            + ",\"data\":{\"type\":\"INVALID_REQUEST\",\"reason\":\""
            + problem.code()
            + "\",\"retryable\":false}}";
    boolean each =
        (problem == JsonRpcScan.Problem.BATCH_TOOL_CALLS
                || problem == JsonRpcScan.Problem.TOOL_NAME)
            && !ids.isEmpty();
    byte[] body = each ? responses(ids, batch, error) : responses(List.of("null"), false, error);
    return new AdmissionCheck.Answered(
        Reason.MCP_INVALID, each ? 200 : 400, Map.of(), body, new McpNote(null, problem.code()));
  }

  private static byte[] responses(List<String> ids, boolean batch, String error) {
    StringBuilder b = new StringBuilder();
    if (batch) {
      b.append('[');
    }
    List<String> each = ids.isEmpty() ? List.of("null") : ids;
    for (int i = 0; i < each.size(); i++) {
      if (i > 0) {
        b.append(',');
      }
      b.append("{\"jsonrpc\":\"2.0\",\"id\":").append(each.get(i)).append(",\"error\":");
      b.append(error).append('}');
      if (!batch) {
        break;
      }
    }
    if (batch) {
      b.append(']');
    }
    return b.toString().getBytes(StandardCharsets.UTF_8);
  }

  private static String quote(@org.jspecify.annotations.Nullable String s) {
    return s == null
        ? "null"
        : '"' + new String(JsonStringEncoder.getInstance().quoteAsString(s)) + '"';
  }
}
