package io.sluice.core.estimate;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.base.ParserBase;
import com.fasterxml.jackson.core.json.UTF8StreamJsonParser;
import java.io.IOException;
import org.jspecify.annotations.Nullable;

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
 * <p>With a known format the scan tallies the prompt itself where it can ({@link ScanWalk}), and
 * the walk is needed only when it could not. One instance per request; not thread-safe.
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

  private boolean byteOffsets; // p reads UTF-8 bytes: its token offsets index the body
  private final int maxStringLength; // the parser's limit on a string value (chars)

  RequestBodyReader(
      JsonFactory factory, byte[] body, int offset, int length, EstimatorSettings settings) {
    this.factory = factory;
    this.body = body;
    this.offset = offset;
    this.length = length;
    this.maxDepth = settings.maxJsonDepth();
    this.settings = settings;
    this.maxStringLength = factory.streamReadConstraints().getMaxStringLength();
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
    return scan(null);
  }

  /**
   * As {@link #scan()}, and with {@code on} (a known format) the prompt tallied as the scan meets
   * it, when it can be ({@link ScanWalk}): then no second pass is needed.
   */
  BodyScan scan(@Nullable ScanWalk on) throws IOException {
    if (on != null) {
      try {
        return scanOnce(on);
      } catch (ScanWalk.Restart again) { // read as the two passes do, from the start
        on.giveUp();
        java.util.Arrays.fill(occurrences, 0);
      }
    }
    return scanOnce(null);
  }

  private BodyScan scanOnce(@Nullable ScanWalk on) throws IOException {
    BodyScan scan = new BodyScan();
    try (JsonParser parser = factory.createParser(body, offset, length)) {
      p = parser;
      byteOffsets = parser instanceof UTF8StreamJsonParser; // offsets in bytes, from offset
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
        if (on != null
            && (w < 0 ? on.sees(name) : on.tallies(name, occurrences[w]))
            && v != JsonToken.VALUE_NULL
            && onScan(on, scan, name, v)) {
          continue;
        }
        BodyMembers.member(this, scan, name, v);
      }
      if (p.nextToken() != null) {
        throw ReadFailure.NOT_JSON; // Python's json refuses data after the root ("Extra data")
      }
      return scan;
    }
  }

  /** A prompt member tallied as the scan meets it; false: it is scanned as usual. */
  private boolean onScan(ScanWalk on, BodyScan scan, String name, JsonToken v) throws IOException {
    boolean tools = name.equals("tools") || name.equals("functions");
    if (!on.mayTally(name, tools && v != JsonToken.START_ARRAY)) {
      return false; // the walk reads it
    }
    try {
      TokenTally tally = on.tally(scan.model);
      if (tools) { // the scan's count of definitions, and their tally
        int count = tools(v, tally);
        if (name.equals("tools")) {
          scan.toolScan().toolDefinitions = count;
          scan.bad(Unreadable.TOOLS, null);
        } else {
          scan.toolScan().functionDefinitions = count;
          scan.bad(Unreadable.FUNCTIONS, null);
        }
      } else {
        on.read(promptMember(on.format(), name, v, tally) > 0);
        BodyMembers.member(this, scan, name, v); // its flags; the value is read already
      }
    } catch (RuntimeException | com.fasterxml.jackson.core.exc.StreamConstraintsException e) {
      throw ScanWalk.RESTART; // the walk would meet it after the scan: read as two passes do
    }
    return true;
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
      byteOffsets = parser instanceof UTF8StreamJsonParser;
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
        int read = promptMember(format, name, v, tally);
        if (read < 0) {
          skipValue();
        }
        sawInput |= read > 0;
      }
    }
    return finish(format, sawInput, tally);
  }

  /** The reply priming of a prompt that was read ({@code sawInput}); returns {@code sawInput}. */
  boolean finish(RequestFormat format, boolean sawInput, TokenTally tally) {
    return ScanWalk.finish(settings, format, sawInput, tally);
  }

  /**
   * One top-level member of {@code format}'s prompt (current token its value {@code v}, not null),
   * read to its end: 1 when it is the prompt's input, 0 another part of it, -1 not read (skip it).
   */
  private int promptMember(RequestFormat format, String name, JsonToken v, TokenTally tally)
      throws IOException {
    boolean sawInput = false;
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
    return consumed ? (sawInput ? 1 : 0) : -1;
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
  private int tools(JsonToken v, TokenTally tally) throws IOException {
    if (v != JsonToken.START_ARRAY) {
      throw ReadFailure.WRONG_TYPE;
    }
    int count = 0;
    JsonToken t;
    while ((t = next()) != JsonToken.END_ARRAY) {
      count++;
      tally.fixed(settings.toolDefinitionOverheadTokens());
      raw(t, tally);
    }
    return count;
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
   * Feeds the current string value to {@code tally}: as a String when it tokenizes, else its
   * lengths read from the body's bytes ({@link Utf8#jsonString}; the parser skips it undecoded), or
   * from the parser's own buffer when the bytes cannot say (the byte heuristic needs only its
   * lengths, so no String is built).
   */
  private void text(TokenTally tally) throws IOException {
    if (tally.tokenizes()) {
      tally.text(p.getText());
      return;
    }
    long at = byteOffsets ? ((ParserBase) p).getTokenCharacterOffset() : -1;
    long lengths = -1; // Jackson's offset: the content's (after its quote), or the quote's
    int from = offset + (int) at;
    if (at > 0 && at < length && (body[from - 1] == '"' || body[from++] == '"')) {
      lengths = Utf8.jsonString(body, from, offset + length, maxStringLength);
    }
    if (lengths >= 0) {
      tally.utf8(lengths & 0xFFFF_FFFFL, lengths >>> 32);
    } else {
      tally.chars(p.getTextCharacters(), p.getTextOffset(), p.getTextLength());
    }
  }

  /** The parser of the pass under way. */
  JsonParser parser() {
    return p;
  }

  /** Next token, enforcing the depth limit on every container start. */
  JsonToken next() throws IOException {
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
  void skipValue() throws IOException {
    JsonToken t = p.currentToken();
    if (t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) {
      skipRestOfContainer();
    }
  }

  /** Skips to the end of the container the parser is currently inside. */
  void skipRestOfContainer() throws IOException {
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
