package io.sluice.core.estimate;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.math.BigDecimal;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Rewrites an LLM request body for the upstream: the output cap clamped (the concise rung of the
 * degrade ladder), an operator's system instruction added, the {@code model} replaced (reroute),
 * the engine's priority field set. The body is read as Python's {@code json} reads it ({@code NaN}
 * and {@code Infinity} literals, the last of duplicate members, nothing after the root). The result
 * is JSON with every other member kept as it was, in order, numbers as written (a duplicate member
 * once, with the last value). Runs only for a request that is rewritten (opt-in by policy).
 *
 * <p>Where each edit goes, per format:
 *
 * <ul>
 *   <li>output cap: every cap member present ({@code max_tokens}, {@code max_completion_tokens},
 *       {@code max_output_tokens}) above the cap (or not a number) is set to it; when none is
 *       present, {@code capField} is added, or by default {@code max_tokens} (chat, completions,
 *       Anthropic messages) or {@code max_output_tokens} (Responses);
 *   <li>instruction: chat — appended to a leading {@code system}/{@code developer} message with
 *       text content, else a new leading {@code system} message; Anthropic — appended to {@code
 *       system} (text, or a text block at the end of its blocks), else set; Responses — appended to
 *       {@code instructions}, else set; completions — not applied;
 *   <li>model and priority: top-level members.
 * </ul>
 */
public final class BodyRewrite {
  private static final ObjectMapper JSON =
      JsonMapper.builder(
              com.fasterxml.jackson.core.JsonFactory.builder()
                  .streamReadConstraints(JsonBounds.depth(JsonBounds.REQUEST_MAX_DEPTH))
                  .build())
          .disable(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES)
          .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
          // read as Python's json reads (NaN and Infinity, nothing after the root) and write
          // NaN and Infinity back as the literals they were
          .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .disable(JsonWriteFeature.WRITE_NAN_AS_STRINGS)
          .build();
  private static final List<String> CAP_FIELDS =
      List.of("max_tokens", "max_completion_tokens", "max_output_tokens");

  private BodyRewrite() {}

  /**
   * What to change.
   *
   * @param outputCap clamp the output cap to this (-1: leave it)
   * @param capField the member to add when the body has no cap (null: by format)
   * @param instruction a system instruction to add (null: none)
   * @param model the new {@code model} (null: keep)
   * @param priorityField the engine's priority member (null: none)
   * @param priorityValue its value, a JSON number as text
   */
  public record Edits(
      long outputCap,
      @Nullable String capField,
      @Nullable String instruction,
      @Nullable String model,
      @Nullable String priorityField,
      @Nullable String priorityValue) {
    public static final Edits NONE = new Edits(-1, null, null, null, null, null);

    public boolean any() {
      return outputCap >= 0 || instruction != null || model != null || priorityField != null;
    }

    public Edits withCap(long cap, @Nullable String field, @Nullable String instr) {
      return new Edits(cap, field, instr, model, priorityField, priorityValue);
    }

    public Edits withModel(@Nullable String m) {
      return new Edits(outputCap, capField, instruction, m, priorityField, priorityValue);
    }

    public Edits withPriority(@Nullable String field, @Nullable String value) {
      return new Edits(outputCap, capField, instruction, model, field, value);
    }
  }

  /**
   * The body with {@code edits} applied, or null when it is not a JSON object (or, with an output
   * cap to clamp, is an embeddings request or of no format a cap can be placed in).
   *
   * @param format the configured format (null or AUTO: from the body's members)
   */
  public static byte @Nullable [] apply(
      @Nullable RequestFormat format, byte[] body, int offset, int length, Edits edits) {
    JsonNode root;
    try {
      root = JSON.readTree(body, offset, length);
    } catch (IOException e) {
      return null;
    }
    if (!(root instanceof ObjectNode o)) {
      return null;
    }
    RequestFormat f = format == null || format == RequestFormat.AUTO ? detect(o) : format;
    if (edits.outputCap() >= 0 && !clampCap(o, f, edits.outputCap(), edits.capField())) {
      return null;
    }
    if (edits.instruction() != null) {
      instruct(o, f, edits.instruction());
    }
    if (edits.model() != null) {
      o.put("model", edits.model());
    }
    if (edits.priorityField() != null && edits.priorityValue() != null) {
      o.set(edits.priorityField(), o.numberNode(new BigDecimal(edits.priorityValue())));
    }
    try {
      return JSON.writeValueAsBytes(o);
    } catch (JsonProcessingException e) {
      return null;
    }
  }

  /** The format a body's members say (the estimator's rule for {@code auto}). */
  static RequestFormat detect(ObjectNode o) {
    if (o.has("messages")) {
      JsonNode model = o.get("model");
      boolean claude =
          model != null
              && model.isTextual()
              && model.asText().toLowerCase(java.util.Locale.ROOT).startsWith("claude");
      return o.has("system") || o.has("anthropic_version") || claude
          ? RequestFormat.ANTHROPIC_MESSAGES
          : RequestFormat.OPENAI_CHAT;
    }
    if (o.has("input")) {
      return o.has("instructions") || o.has("max_output_tokens") || !o.has("encoding_format")
          ? RequestFormat.OPENAI_RESPONSES
          : RequestFormat.OPENAI_EMBEDDINGS;
    }
    if (o.has("prompt")) {
      return RequestFormat.OPENAI_COMPLETIONS;
    }
    return RequestFormat.AUTO;
  }

  private static boolean clampCap(
      ObjectNode o, RequestFormat f, long cap, @Nullable String capField) {
    if (f == RequestFormat.OPENAI_EMBEDDINGS) {
      return false;
    }
    boolean present = false;
    for (String field : CAP_FIELDS) {
      JsonNode v = o.get(field);
      if (v == null || v.isNull()) {
        continue;
      }
      present = true;
      if (!v.canConvertToLong() || !v.isNumber() || v.asLong() > cap || v.asLong() < 0) {
        o.put(field, cap);
      }
    }
    if (present) {
      return true;
    }
    String field = capField;
    if (field == null) {
      field =
          switch (f) {
            case OPENAI_RESPONSES -> "max_output_tokens";
            case OPENAI_CHAT, OPENAI_COMPLETIONS, ANTHROPIC_MESSAGES -> "max_tokens";
            default -> null;
          };
    }
    if (field == null) {
      return false;
    }
    o.put(field, cap);
    return true;
  }

  private static void instruct(ObjectNode o, RequestFormat f, String instruction) {
    switch (f) {
      case OPENAI_CHAT -> {
        JsonNode m = o.get("messages");
        if (!(m instanceof ArrayNode messages)) {
          return;
        }
        JsonNode first = messages.isEmpty() ? null : messages.get(0);
        if (first instanceof ObjectNode fm
            && fm.path("content").isTextual()
            && ("system".equals(fm.path("role").asText())
                || "developer".equals(fm.path("role").asText()))) {
          fm.put("content", fm.get("content").asText() + "\n\n" + instruction);
          return;
        }
        ObjectNode sys = messages.objectNode();
        sys.put("role", "system");
        sys.put("content", instruction);
        messages.insert(0, sys);
      }
      case ANTHROPIC_MESSAGES -> {
        JsonNode s = o.get("system");
        if (s != null && s.isTextual()) {
          o.put("system", s.asText() + "\n\n" + instruction);
        } else if (s instanceof ArrayNode blocks) {
          ObjectNode b = blocks.addObject();
          b.put("type", "text");
          b.put("text", instruction);
        } else {
          o.put("system", instruction);
        }
      }
      case OPENAI_RESPONSES -> {
        JsonNode s = o.get("instructions");
        o.put(
            "instructions",
            s != null && s.isTextual() && !s.asText().isEmpty()
                ? s.asText() + "\n\n" + instruction
                : instruction);
      }
      default -> {
        // completions: a prompt is not a conversation; no instruction is added
      }
    }
  }
}
