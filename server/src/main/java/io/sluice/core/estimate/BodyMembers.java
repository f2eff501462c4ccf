package io.sluice.core.estimate;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import org.jspecify.annotations.Nullable;

/**
 * The scan's reading of one top-level member of a request body into its {@link BodyScan} ({@link
 * RequestBodyReader#scan}): the scalar members a Python engine reads ({@code model}, {@code
 * stream}, the caps and counts), which prompt keys are present, the tool fields.
 */
final class BodyMembers {
  private BodyMembers() {}

  /** One top-level member (current token its value; read to its end). */
  static void member(RequestBodyReader r, BodyScan scan, String name, JsonToken v)
      throws IOException {
    JsonParser p = r.parser();
    switch (name) {
      case "model" -> {
        scan.model = v == JsonToken.VALUE_STRING ? p.getText() : null;
        scan.bad(
            Unreadable.MODEL,
            v == JsonToken.VALUE_STRING || v == JsonToken.VALUE_NULL
                ? null
                : "model: expected a string");
      }
      case "stream" -> stream(scan, LaxValue.bool(p, v));
      case "max_tokens", "max_completion_tokens", "max_output_tokens", "n", "best_of" ->
          integer(scan, name, LaxValue.integer(p, v));
      case "messages" -> scan.messages = v != JsonToken.VALUE_NULL;
      case "system" -> scan.system = v != JsonToken.VALUE_NULL;
      case "instructions" -> scan.instructions = v != JsonToken.VALUE_NULL;
      case "prompt" -> scan.prompt = v == JsonToken.VALUE_STRING || v == JsonToken.START_ARRAY;
      case "input" -> {
        scan.input = v != JsonToken.VALUE_NULL;
        scan.inputFirstElement = null;
        if (v == JsonToken.START_ARRAY) {
          JsonToken first = r.next();
          if (first != JsonToken.END_ARRAY) {
            scan.inputFirstElement = first;
            r.skipValue();
            r.skipRestOfContainer();
          }
          return;
        }
      }
      case "tools", "functions" -> {
        boolean tools = name.equals("tools");
        int count = 0;
        if (v == JsonToken.START_ARRAY) {
          while (r.next() != JsonToken.END_ARRAY) {
            count++;
            r.skipValue();
          }
        }
        String bad =
            v == JsonToken.START_ARRAY || v == JsonToken.VALUE_NULL
                ? null
                : name + ": expected an array";
        definitions(scan, tools, count, bad);
        if (v == JsonToken.START_ARRAY) {
          return;
        }
      }
      case "tool_choice" -> {
        toolChoice(scan, v == JsonToken.VALUE_STRING ? word(p.getText()) : null);
        if (v == JsonToken.START_OBJECT) {
          toolChoice(r, scan);
          return;
        }
      }
      case "parallel_tool_calls" -> parallelToolCalls(scan, LaxValue.bool(p, v));
      case "function_call" -> {
        ToolScan t = scan.toolScan();
        t.functionCallNone = v == JsonToken.VALUE_STRING && "none".equals(p.getText());
        t.functionCallNamed = false;
        if (v == JsonToken.START_OBJECT) {
          t.functionCallNamed = hasName(r);
          return;
        }
      }
      case "anthropic_version", "stop_sequences", "top_k" -> scan.anthropicHint = true;
      case "encoding_format", "dimensions" -> scan.embeddingsHint = true;
      default -> {}
    }
    r.skipValue();
  }

  /** {@code stream} from its lax reading ({@link LaxValue#bool}). */
  static void stream(BodyScan scan, int b) {
    scan.stream = b == 1;
    scan.bad(Unreadable.STREAM, b == LaxValue.BOOL_INVALID ? "stream: expected a boolean" : null);
  }

  /** {@code parallel_tool_calls} from its lax reading ({@link LaxValue#bool}). */
  static void parallelToolCalls(BodyScan scan, int b) {
    scan.toolScan().parallelToolCallsFalse = b == 0;
    scan.bad(
        Unreadable.PARALLEL_TOOL_CALLS,
        b == LaxValue.BOOL_INVALID ? "parallel_tool_calls: expected a boolean" : null);
  }

  /** An output cap or a choice count ({@code name}) from its lax reading ({@link LaxValue}). */
  static void integer(BodyScan scan, String name, long lax) {
    long cap = BodyScan.cap(lax);
    int choices = BodyScan.choices(lax);
    int member =
        switch (name) {
          case "max_tokens" -> {
            scan.maxTokens = cap;
            yield Unreadable.MAX_TOKENS;
          }
          case "max_completion_tokens" -> {
            scan.maxCompletionTokens = cap;
            yield Unreadable.MAX_COMPLETION_TOKENS;
          }
          case "max_output_tokens" -> {
            scan.maxOutputTokens = cap;
            yield Unreadable.MAX_OUTPUT_TOKENS;
          }
          case "n" -> {
            scan.n = choices;
            yield Unreadable.N;
          }
          case "best_of" -> {
            scan.bestOf = choices;
            yield Unreadable.BEST_OF;
          }
          default -> throw new IllegalArgumentException(name);
        };
    boolean count = member == Unreadable.N || member == Unreadable.BEST_OF;
    scan.bad(member, count ? BodyScan.badChoices(name, lax) : BodyScan.badCap(name, lax));
  }

  /** The count of {@code tools} (else {@code functions}) definitions, and why it is unreadable. */
  static void definitions(BodyScan scan, boolean tools, int count, @Nullable String bad) {
    if (tools) {
      scan.toolScan().toolDefinitions = count;
      scan.bad(Unreadable.TOOLS, bad);
    } else {
      scan.toolScan().functionDefinitions = count;
      scan.bad(Unreadable.FUNCTIONS, bad);
    }
  }

  /** A new {@code tool_choice}: its word (a string's, else null); the object's fields cleared. */
  static void toolChoice(BodyScan scan, @Nullable String word) {
    ToolScan t = scan.toolScan();
    t.toolChoice = word;
    t.toolChoiceObject = false;
    t.toolChoiceType = null;
    t.toolChoiceMode = null;
    t.toolChoiceNamed = false;
    t.toolChoiceFunction = false;
    t.disableParallelToolUse = false;
  }

  /** Words of {@code tool_choice} worth keeping; anything else is {@code other}. */
  private static final java.util.Set<String> TOOL_CHOICE_WORDS =
      java.util.Set.of(
          "auto", "none", "required", "any", "tool", "function", "allowed_tools", "custom");

  static String word(String text) {
    return TOOL_CHOICE_WORDS.contains(text) ? text : "other";
  }

  /**
   * The object form of {@code tool_choice} (current token START_OBJECT; read to its end); of
   * duplicate members the last counts.
   */
  private static void toolChoice(RequestBodyReader r, BodyScan scan) throws IOException {
    JsonParser p = r.parser();
    ToolScan t = scan.toolScan();
    t.toolChoiceObject = true;
    while (r.next() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken v = r.next();
      switch (field) {
        case "type" -> t.toolChoiceType = v == JsonToken.VALUE_STRING ? word(p.getText()) : null;
        case "mode" -> t.toolChoiceMode = v == JsonToken.VALUE_STRING ? word(p.getText()) : null;
        case "name" -> t.toolChoiceNamed = v != JsonToken.VALUE_NULL;
        case "function" -> t.toolChoiceFunction = v != JsonToken.VALUE_NULL;
        case "disable_parallel_tool_use" -> t.disableParallelToolUse = LaxValue.bool(p, v) == 1;
        default -> {}
      }
      r.skipValue();
    }
  }

  /** Whether the object (current token START_OBJECT; read to its end) has a string {@code name}. */
  private static boolean hasName(RequestBodyReader r) throws IOException {
    JsonParser p = r.parser();
    boolean named = false;
    while (r.next() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken v = r.next();
      if (field.equals("name")) {
        named = v == JsonToken.VALUE_STRING; // the last name counts
      }
      r.skipValue();
    }
    return named;
  }
}
