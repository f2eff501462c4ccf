package io.sluice.core.mcp;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.io.JsonStringEncoder;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * What an MCP body says, read in place in one pass without a tree: one JSON-RPC message or a batch
 * of them, each its {@code id} (kept as the JSON text it is written back as), {@code method} and,
 * for a {@code tools/call}, {@code params.name}. Every other member is skipped. Bounded: at most
 * {@code maxBatch} messages are read (the rest is not), the nesting at most {@code maxDepth} deep,
 * ids and methods at most {@link #MAX_ID_CHARS} characters, a tool name at most {@code
 * maxToolNameChars}.
 */
public final class JsonRpcScan {
  /** The longest id and method read (JSON text). */
  public static final int MAX_ID_CHARS = 256;

  /** The method of a tool call. */
  public static final String TOOLS_CALL = "tools/call";

  private JsonRpcScan() {}

  /** Why a body is refused ({@code data.reason} of its JSON-RPC error). */
  public enum Problem {
    /** Not JSON, or too deep. */
    MALFORMED("malformed", -32700),
    /** JSON, but no JSON-RPC request: not an object, an empty batch, a method not a string. */
    INVALID("invalid_request", -32600),
    /** A batch over {@code maxBatch} messages. */
    BATCH_TOO_LARGE("batch_too_large", -32600),
    /** A batch with more than one {@code tools/call}. */
    BATCH_TOOL_CALLS("batch_tool_calls", -32600),
    /** A {@code tools/call} without a tool name, or a name over its bound. */
    TOOL_NAME("invalid_tool_name", -32602);

    private final String code;
    private final int jsonRpcCode;

    Problem(String code, int jsonRpcCode) {
      this.code = code;
      this.jsonRpcCode = jsonRpcCode;
    }

    public String code() {
      return code;
    }

    public int jsonRpcCode() {
      return jsonRpcCode;
    }
  }

  /**
   * One message of the body.
   *
   * @param id its id as JSON text ({@code 7}, {@code "a"}), or null: a notification (or a message
   *     without one)
   * @param method its method, or null (a response of the client to the server)
   * @param tool a {@code tools/call}'s {@code params.name}, or null
   */
  public record Message(@Nullable String id, @Nullable String method, @Nullable String tool) {
    public boolean toolCall() {
      return TOOLS_CALL.equals(method);
    }
  }

  /**
   * The body read.
   *
   * @param batch whether it was an array
   * @param messages its messages (all of them, unless {@code problem} stopped the read)
   * @param problem why it is refused, or null
   */
  public record Body(boolean batch, List<Message> messages, @Nullable Problem problem) {
    public Body {
      messages = List.copyOf(messages);
    }

    /** The ids of the messages that expect an answer (their JSON text). */
    public List<String> ids() {
      List<String> ids = new ArrayList<>();
      for (Message m : messages) {
        if (m.id() != null && m.method() != null) {
          ids.add(m.id());
        }
      }
      return ids;
    }
  }

  /** The parser factory of a policy's bounds: made once per policy, shared. */
  public static JsonFactory factory(McpPolicy p) {
    return JsonFactory.builder()
        .streamReadConstraints(
            StreamReadConstraints.builder().maxNestingDepth(p.maxDepth()).build())
        .build();
  }

  /** Reads a body with the policy's bounds ({@code f}: its {@link #factory}). */
  public static Body read(JsonFactory f, byte[] body, int offset, int length, McpPolicy p) {
    List<Message> out = new ArrayList<>();
    boolean batch = false;
    try (JsonParser in = f.createParser(body, offset, length)) {
      JsonToken t = in.nextToken();
      if (t == JsonToken.START_ARRAY) {
        batch = true;
        while ((t = in.nextToken()) != JsonToken.END_ARRAY) {
          if (t == null) {
            return new Body(true, out, Problem.MALFORMED);
          }
          if (out.size() == p.maxBatch()) {
            return new Body(true, out, Problem.BATCH_TOO_LARGE);
          }
          Problem bad = message(in, t, p, out);
          if (bad != null) {
            return new Body(true, out, bad);
          }
        }
        if (out.isEmpty()) {
          return new Body(true, out, Problem.INVALID);
        }
      } else {
        Problem bad = t == null ? Problem.MALFORMED : message(in, t, p, out);
        if (bad != null) {
          return new Body(false, out, bad);
        }
      }
      if (in.nextToken() != null) {
        return new Body(batch, out, Problem.MALFORMED); // trailing content
      }
    } catch (IOException | RuntimeException e) { // not JSON, or over a bound
      return new Body(batch, out, Problem.MALFORMED);
    }
    int calls = 0;
    for (Message m : out) {
      calls += m.toolCall() ? 1 : 0;
    }
    return new Body(batch, out, calls > 1 ? Problem.BATCH_TOOL_CALLS : null);
  }

  /** One message at {@code t}: added to {@code out}, or the problem. */
  private static @Nullable Problem message(
      JsonParser in, JsonToken t, McpPolicy p, List<Message> out) throws IOException {
    if (t != JsonToken.START_OBJECT) {
      in.skipChildren();
      return Problem.INVALID;
    }
    String id = null;
    String method = null;
    String tool = null;
    boolean nameOver = false;
    while (in.nextToken() == JsonToken.FIELD_NAME) {
      String field = in.currentName();
      JsonToken v = in.nextToken();
      switch (field) {
        case "id" -> {
          if (v == JsonToken.VALUE_STRING) {
            if (in.getTextLength() > MAX_ID_CHARS) {
              return Problem.INVALID;
            }
            id =
                '"' + new String(JsonStringEncoder.getInstance().quoteAsString(in.getText())) + '"';
          } else if (v == JsonToken.VALUE_NUMBER_INT) {
            if (in.getTextLength() > 20) {
              return Problem.INVALID;
            }
            id = in.getText();
          } else if (v != JsonToken.VALUE_NULL) {
            in.skipChildren();
            return Problem.INVALID; // an id is a string or a number
          }
        }
        case "method" -> {
          if (v != JsonToken.VALUE_STRING || in.getTextLength() > MAX_ID_CHARS) {
            in.skipChildren();
            return Problem.INVALID;
          }
          method = in.getText();
        }
        case "params" -> {
          if (v == JsonToken.START_OBJECT) {
            while (in.nextToken() == JsonToken.FIELD_NAME) {
              String pf = in.currentName();
              JsonToken pv = in.nextToken();
              if (pf.equals("name") && pv == JsonToken.VALUE_STRING) {
                if (in.getTextLength() > p.maxToolNameChars()) {
                  nameOver = true;
                } else {
                  tool = in.getText();
                }
              } else {
                in.skipChildren();
              }
            }
          } else {
            in.skipChildren();
          }
        }
        default -> in.skipChildren();
      }
    }
    if (TOOLS_CALL.equals(method) && (tool == null || tool.isEmpty() || nameOver)) {
      out.add(new Message(id, method, null));
      return Problem.TOOL_NAME;
    }
    out.add(new Message(id, method, TOOLS_CALL.equals(method) ? tool : null));
    return null;
  }
}
