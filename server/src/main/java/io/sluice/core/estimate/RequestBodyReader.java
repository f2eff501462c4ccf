package io.sluice.core.estimate;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;

/**
 * Reads one request body in two streaming passes over the same bytes; nothing but the current token
 * is materialised.
 *
 * <ol>
 *   <li>{@link #scan()} walks the whole document structurally (validating syntax, depth,
 *       completeness and that nothing follows the root), records the scalar top-level members
 *       ({@code model}, {@code stream}, output caps, counts) as a Python engine reads them ({@link
 *       BodyScan}) and which prompt keys are present. That is enough to resolve {@code auto} and
 *       pick the tokenizer before any text is tokenized, whatever the key order.
 *   <li>{@link #walk} descends only into the prompt-bearing members of the resolved format (the
 *       last of duplicates, as Python's {@code json} keeps) and feeds text pieces and fixed costs
 *       to a {@link TokenTally}.
 * </ol>
 *
 * <p>One instance per request; not thread-safe.
 */
final class RequestBodyReader {
  /** Sentinel output-cap values in {@link BodyScan}. */
  static final long CAP_ABSENT = BodyScan.CAP_ABSENT;

  static final long CAP_INVALID = BodyScan.CAP_INVALID;

  // top-level members the walk reads, by index (walked()); the scan counts each one's
  // occurrences so that the walk reads only the last
  private static final int WALKED = 7;

  private final JsonFactory factory;
  private final byte[] body;
  private final int offset;
  private final int length;
  private final int maxDepth;
  private final EstimatorSettings settings;
  private final int[] occurrences = new int[WALKED];

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

  /** The index of a member the walk reads, or -1. */
  private static int walked(String name) {
    return switch (name) {
      case "messages" -> 0;
      case "system" -> 1;
      case "instructions" -> 2;
      case "input" -> 3;
      case "prompt" -> 4;
      case "tools" -> 5;
      case "functions" -> 6;
      default -> -1;
    };
  }

  // ---------------------------------------------------------------- pass 1

  BodyScan scan() throws IOException {
    BodyScan scan = new BodyScan();
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
        int w = walked(name);
        if (w >= 0) {
          occurrences[w]++;
        }
        member(scan, name, v);
      }
      if (p.nextToken() != null) {
        throw ReadFailure.NOT_JSON; // Python's json refuses data after the root ("Extra data")
      }
      return scan;
    }
  }

  /** One top-level member (current token its value; read to its end). */
  private void member(BodyScan scan, String name, JsonToken v) throws IOException {
    switch (name) {
      case "model" -> {
        scan.model = v == JsonToken.VALUE_STRING ? p.getText() : null;
        scan.bad.model =
            v == JsonToken.VALUE_STRING || v == JsonToken.VALUE_NULL
                ? null
                : "model: expected a string";
      }
      case "stream" -> {
        int b = LaxValue.bool(p, v);
        scan.stream = b == 1;
        scan.bad.stream = b == LaxValue.BOOL_INVALID ? "stream: expected a boolean" : null;
      }
      case "max_tokens" -> {
        long lax = LaxValue.integer(p, v);
        scan.maxTokens = BodyScan.cap(lax);
        scan.bad.maxTokens = BodyScan.badCap(name, lax);
      }
      case "max_completion_tokens" -> {
        long lax = LaxValue.integer(p, v);
        scan.maxCompletionTokens = BodyScan.cap(lax);
        scan.bad.maxCompletionTokens = BodyScan.badCap(name, lax);
      }
      case "max_output_tokens" -> {
        long lax = LaxValue.integer(p, v);
        scan.maxOutputTokens = BodyScan.cap(lax);
        scan.bad.maxOutputTokens = BodyScan.badCap(name, lax);
      }
      case "n" -> {
        long lax = LaxValue.integer(p, v);
        scan.n = BodyScan.choices(lax);
        scan.bad.n = BodyScan.badChoices(name, lax);
      }
      case "best_of" -> {
        long lax = LaxValue.integer(p, v);
        scan.bestOf = BodyScan.choices(lax);
        scan.bad.bestOf = BodyScan.badChoices(name, lax);
      }
      case "messages" -> scan.messages = v != JsonToken.VALUE_NULL;
      case "system" -> scan.system = v != JsonToken.VALUE_NULL;
      case "instructions" -> scan.instructions = v != JsonToken.VALUE_NULL;
      case "prompt" -> scan.prompt = v == JsonToken.VALUE_STRING || v == JsonToken.START_ARRAY;
      case "input" -> {
        scan.input = v != JsonToken.VALUE_NULL;
        scan.inputFirstElement = null;
        if (v == JsonToken.START_ARRAY) {
          JsonToken first = next();
          if (first != JsonToken.END_ARRAY) {
            scan.inputFirstElement = first;
            skipValue();
            skipRestOfContainer();
          }
          return;
        }
      }
      case "tools", "functions" -> {
        boolean tools = name.equals("tools");
        int count = 0;
        if (v == JsonToken.START_ARRAY) {
          while (next() != JsonToken.END_ARRAY) {
            count++;
            skipValue();
          }
        }
        String bad =
            v == JsonToken.START_ARRAY || v == JsonToken.VALUE_NULL
                ? null
                : name + ": expected an array";
        if (tools) {
          scan.tools.toolDefinitions = count;
          scan.bad.tools = bad;
        } else {
          scan.tools.functionDefinitions = count;
          scan.bad.functions = bad;
        }
        if (v == JsonToken.START_ARRAY) {
          return;
        }
      }
      case "tool_choice" -> {
        scan.tools.toolChoice = null;
        scan.tools.toolChoiceObject = false;
        scan.tools.toolChoiceType = null;
        scan.tools.toolChoiceMode = null;
        scan.tools.toolChoiceNamed = false;
        scan.tools.toolChoiceFunction = false;
        scan.tools.disableParallelToolUse = false;
        if (v == JsonToken.VALUE_STRING) {
          scan.tools.toolChoice = word(p.getText());
        } else if (v == JsonToken.START_OBJECT) {
          toolChoice(scan);
          return;
        }
      }
      case "parallel_tool_calls" -> {
        int b = LaxValue.bool(p, v);
        scan.tools.parallelToolCallsFalse = b == 0;
        scan.bad.parallelToolCalls =
            b == LaxValue.BOOL_INVALID ? "parallel_tool_calls: expected a boolean" : null;
      }
      case "function_call" -> {
        scan.tools.functionCallNone = v == JsonToken.VALUE_STRING && "none".equals(p.getText());
        scan.tools.functionCallNamed = false;
        if (v == JsonToken.START_OBJECT) {
          scan.tools.functionCallNamed = hasName();
          return;
        }
      }
      case "anthropic_version", "stop_sequences", "top_k" -> scan.anthropicHint = true;
      case "encoding_format", "dimensions" -> scan.embeddingsHint = true;
      default -> {}
    }
    skipValue();
  }

  /** Words of {@code tool_choice} worth keeping; anything else is {@code other}. */
  private static final java.util.Set<String> TOOL_CHOICE_WORDS =
      java.util.Set.of(
          "auto", "none", "required", "any", "tool", "function", "allowed_tools", "custom");

  private static String word(String text) {
    return TOOL_CHOICE_WORDS.contains(text) ? text : "other";
  }

  /**
   * The object form of {@code tool_choice} (current token START_OBJECT; read to its end); of
   * duplicate members the last counts.
   */
  private void toolChoice(BodyScan scan) throws IOException {
    scan.tools.toolChoiceObject = true;
    while (next() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken v = next();
      switch (field) {
        case "type" ->
            scan.tools.toolChoiceType = v == JsonToken.VALUE_STRING ? word(p.getText()) : null;
        case "mode" ->
            scan.tools.toolChoiceMode = v == JsonToken.VALUE_STRING ? word(p.getText()) : null;
        case "name" -> scan.tools.toolChoiceNamed = v != JsonToken.VALUE_NULL;
        case "function" -> scan.tools.toolChoiceFunction = v != JsonToken.VALUE_NULL;
        case "disable_parallel_tool_use" ->
            scan.tools.disableParallelToolUse = LaxValue.bool(p, v) == 1;
        default -> {}
      }
      skipValue();
    }
  }

  /** Whether the object (current token START_OBJECT; read to its end) has a string {@code name}. */
  private boolean hasName() throws IOException {
    boolean named = false;
    while (next() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken v = next();
      if (field.equals("name")) {
        named = v == JsonToken.VALUE_STRING; // the last name counts
      }
      skipValue();
    }
    return named;
  }

  // ---------------------------------------------------------------- pass 2

  /**
   * Feeds the prompt of {@code format} to {@code tally}.
   *
   * @return false when the format's prompt field is absent
   */
  boolean walk(RequestFormat format, TokenTally tally) throws IOException {
    boolean sawInput = false;
    int[] seen = new int[WALKED];
    try (JsonParser parser = factory.createParser(body, offset, length)) {
      p = parser;
      p.nextToken(); // START_OBJECT, checked by scan()
      while (next() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken v = next();
        int w = walked(name);
        if (w >= 0 && ++seen[w] < occurrences[w]) {
          skipValue(); // a duplicate before the last: Python's json keeps the last
          continue;
        }
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
                text(tally);
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
      text(tally);
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
        text(tally);
      } else {
        throw ReadFailure.WRONG_TYPE;
      }
    }
    return true;
  }

  /** Completions {@code prompt} / embeddings {@code input}: strings or token-id arrays. */
  private boolean stringsOrTokenArrays(JsonToken v, TokenTally tally) throws IOException {
    if (v == JsonToken.VALUE_STRING) {
      text(tally);
      return true;
    }
    if (v != JsonToken.START_ARRAY) {
      throw ReadFailure.WRONG_TYPE;
    }
    JsonToken t;
    while ((t = next()) != JsonToken.END_ARRAY) {
      if (t == JsonToken.VALUE_STRING) {
        text(tally);
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
      case VALUE_STRING -> text(tally);
      case VALUE_NULL -> {}
      case START_OBJECT -> item(tally);
      case START_ARRAY -> {
        JsonToken t;
        while ((t = next()) != JsonToken.END_ARRAY) {
          if (t == JsonToken.START_OBJECT) {
            item(tally);
          } else if (t == JsonToken.VALUE_STRING) {
            text(tally);
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
            text(tally);
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
      text(tally);
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

  /**
   * Feeds the current string value to {@code tally}: as a String when it tokenizes, else from the
   * parser's own buffer (the byte heuristic needs only its length, so no String is built).
   */
  private void text(TokenTally tally) throws IOException {
    if (tally.tokenizes()) {
      tally.text(p.getText());
    } else {
      tally.chars(p.getTextCharacters(), p.getTextOffset(), p.getTextLength());
    }
  }

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
