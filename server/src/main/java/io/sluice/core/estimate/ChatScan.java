package io.sluice.core.estimate;

import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * A chat body (OpenAI chat or Anthropic messages, the format known) read in one pass over its bytes
 * ({@link ByteJson}) instead of Jackson's: the scan's members ({@link BodyScan}, through the same
 * setters as {@link BodyMembers}) and the prompt tallied through the request's {@link ScanWalk} as
 * the one-pass Jackson read tallies it, with the byte heuristic. It reads only the common shape:
 * plain strict JSON, {@code model} once before the prompt, each prompt member once, the values of
 * the members it reads of the types the engine expects, a model the byte heuristic estimates (a
 * model that tokenizes needs the prompt's Strings). Anything else ({@link ByteJson#BAIL}) and the
 * body is read as before, UTF-8 check and Jackson, from the start with a new {@link ScanWalk}; so
 * every body reads as it did ({@code ChatScanTest}: every outcome equal on seeded hostile bodies,
 * cut and changed bodies, against the Jackson read). One per request; not thread-safe.
 */
final class ChatScan {
  private final ByteJson j;
  private final RequestFormat format;
  private final ScanWalk on;
  private final EstimatorSettings settings;
  private final BodyScan scan = new BodyScan();

  @SuppressWarnings("NullAway.Init") // set at the first prompt member, before any text
  private TokenTally tally;

  private boolean modelSeen;
  private int walked; // the prompt members met (bits): each may come once

  private ChatScan(ByteJson j, RequestFormat format, ScanWalk on, EstimatorSettings settings) {
    this.j = j;
    this.format = format;
    this.on = on;
    this.settings = settings;
  }

  /** Whether bodies of {@code format} are read here. */
  static boolean reads(@Nullable RequestFormat format) {
    return format == RequestFormat.OPENAI_CHAT || format == RequestFormat.ANTHROPIC_MESSAGES;
  }

  /**
   * The scan of {@code b[offset, offset + length)} with its prompt tallied in {@code on} (format
   * {@link ScanWalk#format()}), or null: read the body as usual, with a new {@link ScanWalk}
   * ({@code on} may be partly fed).
   */
  static @Nullable BodyScan read(
      ScanWalk on,
      byte[] b,
      int offset,
      int length,
      EstimatorSettings settings,
      com.fasterxml.jackson.core.StreamReadConstraints limits) {
    if (!reads(on.format()) || !ByteJson.withinLimits(limits, length)) {
      return null;
    }
    ChatScan r =
        new ChatScan(
            new ByteJson(b, offset, length, settings.maxJsonDepth()), on.format(), on, settings);
    try {
      r.body();
      return r.scan;
    } catch (RuntimeException e) { // ByteJson.BAIL: what it does not read, Jackson reads
      return null;
    }
  }

  private void body() {
    if (j.peek() != '{') {
      throw ByteJson.BAIL; // an empty body, another root, a byte order mark: Jackson's to say
    }
    j.open(1);
    if (j.firstName()) {
      do {
        member();
      } while (j.more('}') && nextName());
    }
    if (!j.atEnd()) {
      throw ByteJson.BAIL;
    }
  }

  private boolean nextName() {
    j.name();
    return true;
  }

  /** One top-level member (its name read last), its value read to its end. */
  private void member() {
    int c = j.peek();
    if (j.is("model")) {
      model(c);
    } else if (j.is("messages")) {
      if (once(0) && c != 'n') {
        prompt("messages", c == '[');
        messages();
        on.read(true);
      } else {
        j.literal("null");
      }
      scan.messages = c != 'n';
    } else if (j.is("tools") || j.is("functions")) {
      tools(j.is("tools"), c);
    } else if (j.is("system")) {
      if (format == RequestFormat.ANTHROPIC_MESSAGES && once(3) && c != 'n') {
        prompt("system", true);
        tally.fixed(settings.perMessageOverheadTokens());
        content(c, 2);
        on.read(false);
      } else {
        j.skip(2);
      }
      scan.system = c != 'n';
    } else if (j.is("stream")) {
      BodyMembers.stream(scan, bool(c));
    } else if (j.is("parallel_tool_calls")) {
      BodyMembers.parallelToolCalls(scan, bool(c));
    } else {
      String name = integerName(); // looked up once
      if (name != null) {
        integer(name, c);
      } else if (j.is("tool_choice")) {
        toolChoice(c);
      } else if (j.is("input") || j.is("function_call")) {
        throw ByteJson.BAIL; // read by Jackson (the first element's type; the object's name)
      } else {
        others(c);
      }
    }
  }

  /** An output cap or choice count, {@code name}, as {@link LaxValue} reads it; null: absent. */
  private void integer(String name, int c) {
    long lax;
    if (c == 'n') {
      j.literal("null");
      lax = LaxValue.ABSENT;
    } else {
      lax = j.integer();
    }
    BodyMembers.integer(scan, name, lax);
  }

  /** The output cap or choice count the name read last is, or null. */
  private @Nullable String integerName() {
    for (String n : INTEGERS) {
      if (j.is(n)) {
        return n;
      }
    }
    return null;
  }

  private static final String[] INTEGERS = {
    "max_tokens", "max_completion_tokens", "max_output_tokens", "n", "best_of"
  };

  /** The members read only for a flag, and those not read: skipped. */
  private void others(int c) {
    if (j.is("instructions")) {
      scan.instructions = c != 'n';
    } else if (j.is("prompt")) {
      scan.prompt = c == '"' || c == '[';
    } else if (j.is("anthropic_version") || j.is("stop_sequences") || j.is("top_k")) {
      scan.anthropicHint = true;
    } else if (j.is("encoding_format") || j.is("dimensions")) {
      scan.embeddingsHint = true;
    }
    j.skip(2);
  }

  private void model(int c) {
    if (modelSeen || walked != 0) {
      throw ByteJson.BAIL; // a second model, or the prompt before it: the walk reads it
    }
    modelSeen = true;
    on.sees("model");
    if (c == '"') {
      j.string();
      if (j.escaped) {
        throw ByteJson.BAIL;
      }
      scan.model = on.modelName(j.b, j.from, j.to);
    } else {
      j.literal("null"); // another type: Jackson's reading
    }
    scan.bad(Unreadable.MODEL, null);
  }

  /**
   * The first occurrence of prompt member {@code bit}; a second bails (the walk reads the last).
   */
  private boolean once(int bit) {
    if ((walked & (1 << bit)) != 0) {
      throw ByteJson.BAIL;
    }
    walked |= 1 << bit;
    return true;
  }

  /** A prompt member of the format with a value of its type: the walk's tally, by heuristic. */
  private void prompt(String name, boolean typed) {
    if (!typed || !on.tallies(name, 1) || !on.mayTally(name, false)) {
      throw ByteJson.BAIL;
    }
    TokenTally t = on.tally(scan.model);
    if (t.tokenizes()) {
      throw ByteJson.BAIL; // BPE needs the prompt's Strings: Jackson's
    }
    tally = t;
  }

  private void tools(boolean tools, int c) {
    boolean prompt = tools || format == RequestFormat.OPENAI_CHAT;
    once(tools ? 1 : 2);
    int count = 0;
    if (c == 'n') {
      j.literal("null");
    } else if (c != '[') {
      throw ByteJson.BAIL; // no array: Jackson's reading
    } else {
      if (prompt) {
        prompt(tools ? "tools" : "functions", true);
      }
      j.open(2);
      if (j.peek() == ']') {
        j.pos++;
      } else {
        do {
          count++;
          if (prompt) {
            tally.fixed(settings.toolDefinitionOverheadTokens());
            raw(j.peek(), 3);
          } else {
            j.skip(3);
          }
        } while (j.more(']'));
      }
    }
    BodyMembers.definitions(scan, tools, count, null);
  }

  private void toolChoice(int c) {
    if (c == '{') {
      throw ByteJson.BAIL; // the object form: Jackson's
    }
    String word = null;
    if (c == '"') {
      j.string();
      if (j.escaped) {
        throw ByteJson.BAIL;
      }
      word = BodyMembers.word(new String(j.b, j.from, j.to - j.from, StandardCharsets.UTF_8));
    } else {
      j.skip(2);
    }
    BodyMembers.toolChoice(scan, word);
  }

  /** {@code true}, {@code false} or {@code null} as {@link LaxValue#bool} reads it; else bails. */
  private int bool(int c) {
    switch (c) {
      case 't' -> {
        j.literal("true");
        return 1;
      }
      case 'f' -> {
        j.literal("false");
        return 0;
      }
      case 'n' -> {
        j.literal("null");
        return LaxValue.BOOL_ABSENT;
      }
      default -> throw ByteJson.BAIL;
    }
  }

  /** {@code messages}: an array of message objects, each with the per-message overhead. */
  private void messages() {
    j.open(2);
    if (j.peek() == ']') {
      j.pos++;
      return;
    }
    do {
      if (j.peek() != '{') {
        throw ByteJson.BAIL;
      }
      tally.fixed(settings.perMessageOverheadTokens());
      item(3);
    } while (j.more(']'));
  }

  /** Message content at {@code depth}: a string, null, a part object or an array of parts. */
  private void content(int c, int depth) {
    switch (c) {
      case '"' -> text();
      case 'n' -> j.literal("null");
      case '{' -> item(depth);
      case '[' -> {
        j.open(depth);
        if (j.peek() == ']') {
          j.pos++;
          return;
        }
        do {
          int e = j.peek();
          if (e == '{') {
            item(depth + 1);
          } else if (e == '"') {
            text();
          } else if (e == 'n') {
            j.literal("null");
          } else {
            throw ByteJson.BAIL;
          }
        } while (j.more(']'));
      }
      default -> throw ByteJson.BAIL;
    }
  }

  /** A message or content part (an object at {@code depth}), as the Jackson read's {@code item}. */
  private void item(int depth) {
    j.open(depth);
    int typeFrom = -1;
    int typeTo = -1;
    if (j.firstName()) {
      do {
        int c = j.peek();
        if (j.is("type")) {
          if (c == '"') {
            j.string();
            if (j.escaped) {
              throw ByteJson.BAIL;
            }
            typeFrom = j.from;
            typeTo = j.to;
          } else {
            j.skip(depth + 1);
          }
        } else if (j.is("role")
            || j.is("name")
            || j.is("text")
            || j.is("refusal")
            || j.is("thinking")
            || j.is("arguments")) {
          if (c == '"') {
            text();
          } else {
            j.skip(depth + 1);
          }
        } else if (j.is("content") || j.is("output") || j.is("summary")) {
          content(c, depth + 1);
        } else if (j.is("input") || j.is("tool_calls") || j.is("function_call")) {
          raw(c, depth + 1);
        } else {
          j.skip(depth + 1);
        }
      } while (j.more('}') && nextName());
    }
    if (typeFrom >= 0) {
      j.from = typeFrom;
      j.to = typeTo;
      j.escaped = false;
      if (j.is("image_url") || j.is("input_image") || j.is("image")) {
        tally.fixed(settings.imageTokens());
      } else if (j.is("input_audio")
          || j.is("file")
          || j.is("input_file")
          || j.is("document")
          || j.is("container_upload")) {
        tally.fixed(settings.attachmentTokens());
      }
    }
  }

  /** A value counted as JSON text: a container by its bytes, a string by its content. */
  private void raw(int c, int depth) {
    if (c == '"') {
      text();
      return;
    }
    int start = j.pos;
    j.skip(depth);
    if (c == '{' || c == '[') {
      tally.raw(j.b, start, j.pos - start);
    }
  }

  private void text() {
    j.string();
    tally.utf8(j.bytes, j.chars);
  }
}
