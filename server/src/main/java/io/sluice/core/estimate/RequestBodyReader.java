package io.sluice.core.estimate;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * Reads one request body in two streaming passes over the same bytes; nothing but the current token
 * is materialised.
 *
 * <ol>
 *   <li>{@link #scan()} walks the whole document structurally (validating syntax, depth and
 *       completeness), records the scalar top-level fields ({@code model}, {@code stream}, output
 *       caps) and which prompt keys are present. That is enough to resolve {@code auto} and pick
 *       the tokenizer before any text is tokenized, whatever the key order.
 *   <li>{@link #walk} descends only into the prompt-bearing fields of the resolved format and feeds
 *       text pieces and fixed costs to a {@link TokenTally}.
 * </ol>
 *
 * <p>One instance per request; not thread-safe.
 */
final class RequestBodyReader {
  /** Sentinel output-cap values in {@link Scan}. */
  static final long CAP_ABSENT = -1;

  static final long CAP_INVALID = -2;

  private final JsonFactory factory;
  private final byte[] body;
  private final int offset;
  private final int length;
  private final int maxDepth;
  private final EstimatorSettings settings;

  @SuppressWarnings("NullAway.Init") // set by scan() and walk(), the only entry points
  private JsonParser p;

  RequestBodyReader(
      JsonFactory factory, byte[] body, int offset, int length, EstimatorSettings settings) {
    this.factory = factory;
    this.body = body;
    this.offset = offset;
    this.length = length;
    this.maxDepth = settings.maxJsonDepth();
    this.settings = settings;
  }

  /** What the structural pass learned about the top level. */
  static final class Scan {
    boolean empty;
    @Nullable String model;
    boolean stream;
    long maxTokens = CAP_ABSENT;
    long maxCompletionTokens = CAP_ABSENT;
    long maxOutputTokens = CAP_ABSENT;
    // OpenAI's n (choices) and best_of (completions: candidates generated server-side), 1 if
    // absent or unreadable, at most MAX_CHOICES
    int n = 1;
    int bestOf = 1;
    boolean messages;
    boolean system;
    boolean instructions;
    boolean prompt;
    boolean input;
    @Nullable JsonToken inputFirstElement;
    boolean anthropicHint;
    boolean embeddingsHint;
    // fan-out (FanOut): definitions in tools / functions, and what tool_choice,
    // parallel_tool_calls and the legacy function_call say (short known words only, never the
    // client's text)
    int tools;
    @Nullable String toolChoice; // the string form: auto, none, required, other
    boolean toolChoiceObject;
    @Nullable String
        toolChoiceType; // the object form's type (auto, none, any, tool, function, ...)
    @Nullable String toolChoiceMode; // allowed_tools: auto or required
    boolean toolChoiceNamed; // the object names a tool or function
    boolean disableParallelToolUse; // Anthropic tool_choice.disable_parallel_tool_use: true
    boolean parallelToolCallsFalse; // parallel_tool_calls: false (anything but a boolean: ignored)
    boolean functionCallNamed; // legacy function_call: {name: ...}
    boolean functionCallNone; // legacy function_call: "none"

    /**
     * The fan-out the body declares, read as {@code format} reads it; {@link FanOut#NONE} without
     * tools, or for a format without tools (completions, embeddings, unknown).
     */
    FanOut fanOut(@Nullable RequestFormat format) {
      if (tools == 0 || format == null) {
        return FanOut.NONE;
      }
      boolean forced;
      boolean none;
      boolean parallel;
      switch (format) {
        case OPENAI_CHAT, OPENAI_RESPONSES -> {
          String type = toolChoiceType;
          forced =
              "required".equals(toolChoice)
                  || (toolChoiceObject
                      && (type == null
                          ? toolChoiceNamed
                          : !type.equals("auto")
                              && !type.equals("none")
                              && (!type.equals("allowed_tools")
                                  || "required".equals(toolChoiceMode))))
                  || (format == RequestFormat.OPENAI_CHAT
                      && toolChoice == null
                      && functionCallNamed);
          none =
              "none".equals(toolChoice)
                  || (toolChoiceObject && "none".equals(type))
                  || (format == RequestFormat.OPENAI_CHAT
                      && toolChoice == null
                      && !toolChoiceObject
                      && functionCallNone);
          parallel = !none && !parallelToolCallsFalse;
        }
        case ANTHROPIC_MESSAGES -> {
          String type = toolChoiceObject ? toolChoiceType : null;
          forced = "any".equals(type) || "tool".equals(type);
          none = "none".equals(type);
          parallel = !none && !disableParallelToolUse;
        }
        default -> {
          return FanOut.NONE;
        }
      }
      return new FanOut(tools, forced, parallel);
    }

    /** Resolves {@link RequestFormat#AUTO} from the keys; null when nothing matches. */
    @Nullable RequestFormat detect() {
      String m = model == null ? "" : model.toLowerCase(Locale.ROOT);
      if (messages) {
        return system || anthropicHint || m.startsWith("claude") || m.contains("anthropic")
            ? RequestFormat.ANTHROPIC_MESSAGES
            : RequestFormat.OPENAI_CHAT;
      }
      if (prompt) {
        return RequestFormat.OPENAI_COMPLETIONS;
      }
      if (input) {
        if (inputFirstElement == JsonToken.START_OBJECT) {
          return RequestFormat.OPENAI_RESPONSES;
        }
        if (inputFirstElement == JsonToken.VALUE_NUMBER_INT
            || inputFirstElement == JsonToken.START_ARRAY
            || embeddingsHint
            || m.contains("embed")) {
          return RequestFormat.OPENAI_EMBEDDINGS;
        }
        return RequestFormat.OPENAI_RESPONSES;
      }
      if (instructions) {
        return RequestFormat.OPENAI_RESPONSES;
      }
      return null;
    }
  }

  // ---------------------------------------------------------------- pass 1

  Scan scan() throws IOException {
    Scan scan = new Scan();
    try (JsonParser parser = factory.createParser(body, offset, length)) {
      p = parser;
      JsonToken root = p.nextToken();
      if (root == null) {
        scan.empty = true;
        return scan;
      }
      if (root != JsonToken.START_OBJECT) {
        if (root == JsonToken.START_ARRAY) {
          skipValue(); // report syntax or depth errors before the type error
        }
        throw ReadFailure.WRONG_TYPE;
      }
      while (next() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken v = next();
        switch (name) {
          case "model" -> scan.model = v == JsonToken.VALUE_STRING ? p.getText() : null;
          case "stream" -> scan.stream = v == JsonToken.VALUE_TRUE;
          case "max_tokens" -> scan.maxTokens = cap(v);
          case "max_completion_tokens" -> scan.maxCompletionTokens = cap(v);
          case "max_output_tokens" -> scan.maxOutputTokens = cap(v);
          case "n" -> scan.n = choices(v);
          case "best_of" -> scan.bestOf = choices(v);
          case "messages" -> scan.messages = v != JsonToken.VALUE_NULL;
          case "system" -> scan.system = v != JsonToken.VALUE_NULL;
          case "instructions" -> scan.instructions = v != JsonToken.VALUE_NULL;
          case "prompt" -> scan.prompt = v == JsonToken.VALUE_STRING || v == JsonToken.START_ARRAY;
          case "input" -> {
            scan.input = v != JsonToken.VALUE_NULL;
            if (v == JsonToken.START_ARRAY) {
              JsonToken first = next();
              if (first != JsonToken.END_ARRAY) {
                scan.inputFirstElement = first;
                skipValue();
                skipRestOfContainer();
              }
              continue;
            }
          }
          case "tools", "functions" -> {
            if (v == JsonToken.START_ARRAY) {
              while (next() != JsonToken.END_ARRAY) {
                scan.tools++;
                skipValue();
              }
              continue;
            }
          }
          case "tool_choice" -> {
            if (v == JsonToken.VALUE_STRING) {
              scan.toolChoice = word(p.getText());
            } else if (v == JsonToken.START_OBJECT) {
              toolChoice(scan);
              continue;
            }
          }
          case "parallel_tool_calls" -> scan.parallelToolCallsFalse = v == JsonToken.VALUE_FALSE;
          case "function_call" -> {
            if (v == JsonToken.VALUE_STRING) {
              scan.functionCallNone = "none".equals(p.getText());
            } else if (v == JsonToken.START_OBJECT) {
              scan.functionCallNamed = hasName();
              continue;
            }
          }
          case "anthropic_version", "stop_sequences", "top_k" -> scan.anthropicHint = true;
          case "encoding_format", "dimensions" -> scan.embeddingsHint = true;
          default -> {}
        }
        skipValue();
      }
      return scan;
    }
  }

  /** Words of {@code tool_choice} worth keeping; anything else is {@code other}. */
  private static final java.util.Set<String> TOOL_CHOICE_WORDS =
      java.util.Set.of(
          "auto", "none", "required", "any", "tool", "function", "allowed_tools", "custom");

  private static String word(String text) {
    return TOOL_CHOICE_WORDS.contains(text) ? text : "other";
  }

  /** The object form of {@code tool_choice} (current token START_OBJECT; read to its end). */
  private void toolChoice(Scan scan) throws IOException {
    scan.toolChoiceObject = true;
    while (next() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken v = next();
      switch (field) {
        case "type" -> scan.toolChoiceType = v == JsonToken.VALUE_STRING ? word(p.getText()) : null;
        case "mode" -> scan.toolChoiceMode = v == JsonToken.VALUE_STRING ? word(p.getText()) : null;
        case "name", "function" -> scan.toolChoiceNamed |= v != JsonToken.VALUE_NULL;
        case "disable_parallel_tool_use" -> scan.disableParallelToolUse = v == JsonToken.VALUE_TRUE;
        default -> {}
      }
      skipValue();
    }
  }

  /** Whether the object (current token START_OBJECT; read to its end) has a {@code name}. */
  private boolean hasName() throws IOException {
    boolean named = false;
    while (next() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken v = next();
      named |= field.equals("name") && v == JsonToken.VALUE_STRING;
      skipValue();
    }
    return named;
  }

  /** Reads an output cap: a positive long, {@link #CAP_ABSENT}, {@link #CAP_INVALID}. */
  /** The most choices one request is counted for (OpenAI's own limit on {@code n} is 128). */
  static final int MAX_CHOICES = 128;

  /**
   * A choice count ({@code n}, {@code best_of}): a positive integer, at most {@link #MAX_CHOICES};
   * anything else counts as 1 (the upstream refuses it; the estimate stays the single answer's).
   */
  private int choices(JsonToken v) throws IOException {
    long c = cap(v);
    if (c == CAP_ABSENT || c == CAP_INVALID) {
      return 1;
    }
    return (int) Math.min(MAX_CHOICES, c);
  }

  private long cap(JsonToken v) throws IOException {
    if (v == JsonToken.VALUE_NULL) {
      return CAP_ABSENT;
    }
    if (v != JsonToken.VALUE_NUMBER_INT) {
      return CAP_INVALID; // strings, floats, booleans, containers (skipped by the caller)
    }
    if (p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
      return p.getBigIntegerValue().signum() > 0 ? Long.MAX_VALUE : CAP_INVALID;
    }
    long value = p.getLongValue();
    return value > 0 ? value : CAP_INVALID;
  }

  // ---------------------------------------------------------------- pass 2

  /**
   * Feeds the prompt of {@code format} to {@code tally}.
   *
   * @return false when the format's prompt field is absent
   */
  boolean walk(RequestFormat format, TokenTally tally) throws IOException {
    boolean sawInput = false;
    try (JsonParser parser = factory.createParser(body, offset, length)) {
      p = parser;
      p.nextToken(); // START_OBJECT, checked by scan()
      while (next() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken v = next();
        if (v == JsonToken.VALUE_NULL) {
          continue;
        }
        boolean consumed = true;
        switch (format) {
          case OPENAI_CHAT -> {
            switch (name) {
              case "messages" -> sawInput |= messages(v, tally);
              case "tools", "functions" -> tools(v, tally);
              default -> consumed = false;
            }
          }
          case ANTHROPIC_MESSAGES -> {
            switch (name) {
              case "messages" -> sawInput |= messages(v, tally);
              case "system" -> {
                tally.fixed(settings.perMessageOverheadTokens());
                content(v, tally);
              }
              case "tools" -> tools(v, tally);
              default -> consumed = false;
            }
          }
          case OPENAI_RESPONSES -> {
            switch (name) {
              case "input" -> sawInput |= responsesInput(v, tally);
              case "instructions" -> {
                if (v != JsonToken.VALUE_STRING) {
                  throw ReadFailure.WRONG_TYPE;
                }
                tally.fixed(settings.perMessageOverheadTokens());
                tally.text(p.getText());
                sawInput = true;
              }
              case "tools" -> tools(v, tally);
              default -> consumed = false;
            }
          }
          case OPENAI_COMPLETIONS -> {
            if (name.equals("prompt")) {
              sawInput |= stringsOrTokenArrays(v, tally);
            } else {
              consumed = false;
            }
          }
          case OPENAI_EMBEDDINGS -> {
            if (name.equals("input")) {
              sawInput |= stringsOrTokenArrays(v, tally);
            } else {
              consumed = false;
            }
          }
          case AUTO -> throw new IllegalStateException("format: auto (expected: resolved)");
        }
        if (!consumed) {
          skipValue();
        }
      }
    }
    if (sawInput
        && (format == RequestFormat.OPENAI_CHAT
            || format == RequestFormat.OPENAI_RESPONSES
            || format == RequestFormat.ANTHROPIC_MESSAGES)) {
      tally.fixed(settings.replyPrimingTokens());
    }
    return sawInput;
  }

  /** {@code messages}: an array of message objects, each with the per-message overhead. */
  private boolean messages(JsonToken v, TokenTally tally) throws IOException {
    if (v != JsonToken.START_ARRAY) {
      throw ReadFailure.WRONG_TYPE;
    }
    JsonToken t;
    while ((t = next()) != JsonToken.END_ARRAY) {
      if (t != JsonToken.START_OBJECT) {
        throw ReadFailure.WRONG_TYPE;
      }
      tally.fixed(settings.perMessageOverheadTokens());
      item(tally);
    }
    return true;
  }

  /** Responses {@code input}: a string, or an array of items (messages, tool calls, outputs). */
  private boolean responsesInput(JsonToken v, TokenTally tally) throws IOException {
    if (v == JsonToken.VALUE_STRING) {
      tally.fixed(settings.perMessageOverheadTokens());
      tally.text(p.getText());
      return true;
    }
    if (v != JsonToken.START_ARRAY) {
      throw ReadFailure.WRONG_TYPE;
    }
    JsonToken t;
    while ((t = next()) != JsonToken.END_ARRAY) {
      tally.fixed(settings.perMessageOverheadTokens());
      if (t == JsonToken.START_OBJECT) {
        item(tally);
      } else if (t == JsonToken.VALUE_STRING) {
        tally.text(p.getText());
      } else {
        throw ReadFailure.WRONG_TYPE;
      }
    }
    return true;
  }

  /** Completions {@code prompt} / embeddings {@code input}: strings or token-id arrays. */
  private boolean stringsOrTokenArrays(JsonToken v, TokenTally tally) throws IOException {
    if (v == JsonToken.VALUE_STRING) {
      tally.text(p.getText());
      return true;
    }
    if (v != JsonToken.START_ARRAY) {
      throw ReadFailure.WRONG_TYPE;
    }
    JsonToken t;
    while ((t = next()) != JsonToken.END_ARRAY) {
      if (t == JsonToken.VALUE_STRING) {
        tally.text(p.getText());
      } else if (t == JsonToken.VALUE_NUMBER_INT) {
        tally.fixed(1); // a flat token array: one token per id
      } else if (t == JsonToken.START_ARRAY) {
        JsonToken id;
        while ((id = next()) != JsonToken.END_ARRAY) {
          if (id != JsonToken.VALUE_NUMBER_INT) {
            throw ReadFailure.WRONG_TYPE;
          }
          tally.fixed(1);
        }
      } else {
        throw ReadFailure.WRONG_TYPE;
      }
    }
    return true;
  }

  /** {@code tools} / {@code functions}: per definition, the overhead plus its JSON text. */
  private void tools(JsonToken v, TokenTally tally) throws IOException {
    if (v != JsonToken.START_ARRAY) {
      throw ReadFailure.WRONG_TYPE;
    }
    JsonToken t;
    while ((t = next()) != JsonToken.END_ARRAY) {
      tally.fixed(settings.toolDefinitionOverheadTokens());
      raw(t, tally);
    }
  }

  /** Message content: a string, an array of parts (or strings), or a single part object. */
  private void content(JsonToken v, TokenTally tally) throws IOException {
    switch (v) {
      case VALUE_STRING -> tally.text(p.getText());
      case VALUE_NULL -> {}
      case START_OBJECT -> item(tally);
      case START_ARRAY -> {
        JsonToken t;
        while ((t = next()) != JsonToken.END_ARRAY) {
          if (t == JsonToken.START_OBJECT) {
            item(tally);
          } else if (t == JsonToken.VALUE_STRING) {
            tally.text(p.getText());
          } else if (t != JsonToken.VALUE_NULL) {
            throw ReadFailure.WRONG_TYPE;
          }
        }
      }
      default -> throw ReadFailure.WRONG_TYPE;
    }
  }

  /**
   * A message, content part or Responses item (current token START_OBJECT). Fields may come in any
   * order, so text fields are counted as they appear and the media cost, which depends on {@code
   * type}, is added at the end.
   */
  private void item(TokenTally tally) throws IOException {
    String type = null;
    while (next() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken v = next();
      switch (field) {
        case "type" -> {
          if (v == JsonToken.VALUE_STRING) {
            type = p.getText();
          } else {
            skipValue();
          }
        }
        case "role", "name", "text", "refusal", "thinking", "arguments" -> {
          if (v == JsonToken.VALUE_STRING) {
            tally.text(p.getText());
          } else {
            skipValue();
          }
        }
        case "content", "output", "summary" -> content(v, tally);
        case "input", "tool_calls", "function_call" -> raw(v, tally);
        default -> skipValue();
      }
    }
    if (type != null) {
      switch (type) {
        case "image_url", "input_image", "image" -> tally.fixed(settings.imageTokens());
        case "input_audio", "file", "input_file", "document", "container_upload" ->
            tally.fixed(settings.attachmentTokens());
        default -> {}
      }
    }
  }

  /** Counts a value as JSON text: containers by their raw bytes, strings by their content. */
  private void raw(JsonToken v, TokenTally tally) throws IOException {
    if (v == JsonToken.VALUE_STRING) {
      tally.text(p.getText());
      return;
    }
    if (v != JsonToken.START_OBJECT && v != JsonToken.START_ARRAY) {
      return;
    }
    long start = p.currentTokenLocation().getByteOffset();
    skipValue();
    long end = p.currentTokenLocation().getByteOffset() + 1;
    if (start >= 0 && end > start && end <= length) {
      tally.raw(body, offset + (int) start, (int) (end - start));
    }
  }

  // ---------------------------------------------------------------- tokens

  /** Next token, enforcing the depth limit on every container start. */
  private JsonToken next() throws IOException {
    JsonToken t = p.nextToken();
    if (t == null) {
      throw ReadFailure.TRUNCATED;
    }
    if ((t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY)
        && p.getParsingContext().getNestingDepth() > maxDepth) {
      throw ReadFailure.TOO_DEEP;
    }
    return t;
  }

  /** Skips the current value (all of it when it is a container start). */
  private void skipValue() throws IOException {
    JsonToken t = p.currentToken();
    if (t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) {
      skipRestOfContainer();
    }
  }

  /** Skips to the end of the container the parser is currently inside. */
  private void skipRestOfContainer() throws IOException {
    int open = 1;
    while (open > 0) {
      JsonToken t = next();
      if (t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) {
        open++;
      } else if (t == JsonToken.END_OBJECT || t == JsonToken.END_ARRAY) {
        open--;
      }
    }
  }
}
