package io.sluice.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sluice.emulator.FilterConfig;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.emulator.VirtualScheduler;
import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.ResponseBody;
import io.sluice.upstream.Upstream;
import io.sluice.upstream.UpstreamRequest;
import io.sluice.upstream.UpstreamResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The reconciliation table (docs/estimation.md, "Reconciliation"), cell by cell: each format ×
 * response body (JSON, SSE) × way the request ends, through the Envoy emulator, with a tier whose
 * input and output token budgets make the reservation and its reconciliation run. Each cell asserts
 * the charge rule and the tokens charged ({@code sluice.tokens.charged}), the tenant bucket's
 * reconciliation ({@code sluice.quota.reconciled.tokens}), the growth in flight of a stream past
 * its reserve ({@code sluice.output.overruns}), the permit released exactly once, and nothing left
 * in flight.
 *
 * <p>The emulator's timers run on a {@link VirtualScheduler} that only this test moves: a client
 * cancel "mid-stream" is armed at 1 ms of virtual time and fires when the test advances the clock,
 * after Sluice answered every chunk sent so far, so the cut falls at the same point every run.
 * (Message timeouts never fire: virtual time moves by 1 ms per cancel only.)
 */
@Timeout(60)
class ReconcileE2eTest {
  private static final Pattern ESTIMATE = Pattern.compile("input=(\\d+);output=(\\d+);work=(\\d+)");
  private static final String[] RULES = {
    "reported", "streamed", "no_answer", "upstream_error", "reserve"
  };

  /** Requests ask for this many output tokens: the output reserve. */
  static final int MAX_TOKENS = 16;

  /** Text deltas of a whole answer (one {@code " hello"} each: one BPE token, 6 bytes). */
  static final int DELTAS = 24;

  /** Text deltas that went by before a cut (more than {@link #MAX_TOKENS}: the work grows). */
  static final int DELTAS_BEFORE_CUT = 20;

  /** Usage the upstream reports for a whole answer. */
  static final long USAGE_INPUT = 57;

  static final long USAGE_OUTPUT = DELTAS;

  /** Anthropic's {@code message_start} reports the input and {@code output_tokens: 2}. */
  static final long ANTHROPIC_START_OUTPUT = 2;

  private final VirtualScheduler clock = new VirtualScheduler();
  private final ScriptedUpstream upstream = new ScriptedUpstream();
  private SluiceEnvoyHarness h;

  @BeforeEach
  void pollOften() {
    // each chunk waits for Sluice's answer: poll every few ms, not every 100 ms (bounded all the
    // same: 5 s at most per wait)
    Awaitility.setDefaultPollDelay(Duration.ZERO);
    Awaitility.setDefaultPollInterval(Duration.ofMillis(2));
  }

  @AfterEach
  void tearDown() {
    try {
      if (h != null) {
        h.close();
      }
    } finally {
      Awaitility.reset();
    }
  }

  /** The policy: a tier with token budgets, one route per format, one pool per shutdown cell. */
  static Policy policy() {
    Policy p =
        Policy.base()
            .with("server.warmup.enabled", "false") // a cold JVM's warm-up takes seconds
            // the upstream's error answers pass as they are (UPSTREAM_ERROR's row charges them):
            // typed upstream failures have their own test (UpstreamFailuresE2eTest)
            .with("upstreamErrors.rewrite", "false")
            .with(
                "tiers.metered",
                "{weight: 4, maxInFlight: 0, inputTpm: 100000000, outputTpm: 100000000}")
            .with("tenants.known.acme.tier", "metered")
            .with(
                "routes",
                "["
                    + "{name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive,"
                    + " format: openai-chat},"
                    + "{name: completions, match: {pathPrefix: /v1/completions}, class: interactive,"
                    + " format: openai-completions},"
                    + "{name: responses, match: {pathPrefix: /v1/responses}, class: interactive,"
                    + " format: openai-responses},"
                    + "{name: messages, match: {pathPrefix: /v1/messages}, class: interactive,"
                    + " format: anthropic-messages}]");
    for (Format f : Format.values()) {
      for (Body b : Body.values()) {
        p = p.with("pools." + shutdownPool(f, b), "{capacity: 1000}");
      }
    }
    return p;
  }

  static String shutdownPool(Format f, Body b) {
    return "down_"
        + f.name().toLowerCase(java.util.Locale.ROOT)
        + "_"
        + b.name().toLowerCase(java.util.Locale.ROOT);
  }

  // ------------------------------------------------------------------------------------ formats

  enum Body {
    JSON,
    SSE
  }

  /** Each API's request and answer, JSON and SSE, as the provider sends them. */
  enum Format {
    OPENAI_CHAT("/v1/chat/completions", true) {
      @Override
      String request(boolean stream, boolean usage) {
        return "{\"model\":\"gpt-4o\",\"max_tokens\":"
            + MAX_TOKENS
            + ",\"stream\":"
            + stream
            + (stream && usage ? ",\"stream_options\":{\"include_usage\":true}" : "")
            + ",\"messages\":[{\"role\":\"user\",\"content\":\"Say hello 24 times.\"}]}";
      }

      @Override
      String ssePreamble() {
        return chunk("{\"role\":\"assistant\",\"content\":\"\"}", "null");
      }

      @Override
      String sseDelta() {
        return chunk("{\"content\":\" hello\"}", "null");
      }

      @Override
      String sseTail(boolean usage) {
        return chunk("{}", "\"stop\"")
            + (usage
                ? "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\","
                    + "\"created\":1700000000,\"model\":\"gpt-4o\",\"choices\":[],"
                    + "\"usage\":{\"prompt_tokens\":57,\"completion_tokens\":24,"
                    + "\"total_tokens\":81}}\n\n"
                : "")
            + "data: [DONE]\n\n";
      }

      private String chunk(String delta, String finish) {
        return "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\","
            + "\"created\":1700000000,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,"
            + "\"delta\":"
            + delta
            + ",\"logprobs\":null,\"finish_reason\":"
            + finish
            + "}]}\n\n";
      }

      @Override
      String json(boolean usage) {
        return "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1700000000,"
            + "\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
            + "\"content\":\""
            + answerText()
            + "\"},\"finish_reason\":\"stop\"}]"
            + (usage
                ? ",\"usage\":{\"prompt_tokens\":57,\"completion_tokens\":24,\"total_tokens\":81}"
                : "")
            + "}";
      }
    },
    OPENAI_COMPLETIONS("/v1/completions", true) {
      @Override
      String request(boolean stream, boolean usage) {
        return "{\"model\":\"gpt-3.5-turbo-instruct\",\"max_tokens\":"
            + MAX_TOKENS
            + ",\"stream\":"
            + stream
            + (stream && usage ? ",\"stream_options\":{\"include_usage\":true}" : "")
            + ",\"prompt\":\"Say hello 24 times.\"}";
      }

      @Override
      String ssePreamble() {
        return ""; // completions stream text from the first event
      }

      @Override
      String sseDelta() {
        return chunk(" hello", "null");
      }

      @Override
      String sseTail(boolean usage) {
        return chunk("", "\"length\"")
            + (usage
                ? "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\","
                    + "\"created\":1700000000,\"model\":\"gpt-3.5-turbo-instruct\","
                    + "\"choices\":[],\"usage\":{\"prompt_tokens\":57,\"completion_tokens\":24,"
                    + "\"total_tokens\":81}}\n\n"
                : "")
            + "data: [DONE]\n\n";
      }

      private String chunk(String text, String finish) {
        return "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1700000000,"
            + "\"model\":\"gpt-3.5-turbo-instruct\",\"choices\":[{\"text\":\""
            + text
            + "\",\"index\":0,\"logprobs\":null,\"finish_reason\":"
            + finish
            + "}]}\n\n";
      }

      @Override
      String json(boolean usage) {
        return "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1700000000,"
            + "\"model\":\"gpt-3.5-turbo-instruct\",\"choices\":[{\"text\":\""
            + answerText()
            + "\",\"index\":0,\"logprobs\":null,\"finish_reason\":\"length\"}]"
            + (usage
                ? ",\"usage\":{\"prompt_tokens\":57,\"completion_tokens\":24,\"total_tokens\":81}"
                : "")
            + "}";
      }
    },
    OPENAI_RESPONSES("/v1/responses", true) {
      @Override
      String request(boolean stream, boolean usage) {
        return "{\"model\":\"gpt-4o\",\"max_output_tokens\":"
            + MAX_TOKENS
            + ",\"stream\":"
            + stream
            + ",\"input\":\"Say hello 24 times.\"}";
      }

      @Override
      String ssePreamble() {
        return "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,"
            + "\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\","
            + "\"model\":\"gpt-4o\",\"output\":[],\"usage\":null}}\n\n"
            + "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\","
            + "\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\","
            + "\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}}\n\n";
      }

      @Override
      String sseDelta() {
        return "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
            + "\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\" hello\"}\n\n";
      }

      @Override
      String sseTail(boolean usage) {
        return "event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\","
            + "\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"text\":\""
            + answerText()
            + "\"}\n\n"
            + "event: response.completed\ndata: {\"type\":\"response.completed\","
            + "\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\","
            + "\"model\":\"gpt-4o\",\"output\":[{\"id\":\"msg_1\",\"type\":\"message\","
            + "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\""
            + answerText()
            + "\"}]}]"
            + (usage
                ? ",\"usage\":{\"input_tokens\":57,\"input_tokens_details\":{\"cached_tokens\":0},"
                    + "\"output_tokens\":24,\"output_tokens_details\":{\"reasoning_tokens\":0},"
                    + "\"total_tokens\":81}"
                : "")
            + "}}\n\n";
      }

      @Override
      String json(boolean usage) {
        return "{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\","
            + "\"model\":\"gpt-4o\",\"output\":[{\"id\":\"msg_1\",\"type\":\"message\","
            + "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\""
            + answerText()
            + "\"}]}]"
            + (usage
                ? ",\"usage\":{\"input_tokens\":57,\"input_tokens_details\":{\"cached_tokens\":0},"
                    + "\"output_tokens\":24,\"output_tokens_details\":{\"reasoning_tokens\":0},"
                    + "\"total_tokens\":81}"
                : "")
            + "}";
      }
    },
    ANTHROPIC_MESSAGES("/v1/messages", false) {
      @Override
      String request(boolean stream, boolean usage) {
        return "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":"
            + MAX_TOKENS
            + ",\"stream\":"
            + stream
            + ",\"messages\":[{\"role\":\"user\",\"content\":\"Say hello 24 times.\"}]}";
      }

      @Override
      String ssePreamble() {
        return "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
            + "\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\","
            + "\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,"
            + "\"usage\":{\"input_tokens\":57,\"cache_creation_input_tokens\":0,"
            + "\"cache_read_input_tokens\":0,\"output_tokens\":2}}}\n\n"
            + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
            + "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
            + "event: ping\ndata: {\"type\":\"ping\"}\n\n";
      }

      @Override
      String sseDelta() {
        return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
            + "\"delta\":{\"type\":\"text_delta\",\"text\":\" hello\"}}\n\n";
      }

      @Override
      String sseTail(boolean usage) {
        return "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
            + "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
            + "\"max_tokens\",\"stop_sequence\":null}"
            + (usage ? ",\"usage\":{\"output_tokens\":24}" : "")
            + "}\n\n"
            + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
      }

      @Override
      String json(boolean usage) {
        return "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\","
            + "\"model\":\"claude-sonnet-4-5\",\"content\":[{\"type\":\"text\",\"text\":\""
            + answerText()
            + "\"}],\"stop_reason\":\"max_tokens\",\"stop_sequence\":null"
            + (usage ? ",\"usage\":{\"input_tokens\":57,\"output_tokens\":24}" : "")
            + "}";
      }
    };

    final String path;
    final boolean bpe; // the model has a known BPE encoding (else the meter counts bytes / 4)

    Format(String path, boolean bpe) {
      this.path = path;
      this.bpe = bpe;
    }

    abstract String request(boolean stream, boolean usage);

    /** Events before the first text delta. */
    abstract String ssePreamble();

    /** One text delta event: {@code " hello"}. */
    abstract String sseDelta();

    /** Events after the last text delta, down to the format's last event. */
    abstract String sseTail(boolean usage);

    abstract String json(boolean usage);

    /** Output tokens the meter counts for {@code deltas} text deltas. */
    long metered(int deltas) {
      return bpe ? deltas : (6L * deltas + 3) / 4; // " hello": 1 token in o200k/cl100k; 6 bytes
    }

    /** Input tokens the stream reported before its text (Anthropic's message_start), or -1. */
    long inputReportedEarly() {
      return this == ANTHROPIC_MESSAGES ? USAGE_INPUT : -1;
    }

    /** Output tokens the stream reported before its text (Anthropic's message_start: 2). */
    long outputReportedEarly() {
      return this == ANTHROPIC_MESSAGES ? ANTHROPIC_START_OUTPUT : 0;
    }

    /** An error body as this provider sends it. */
    String error(int status) {
      if (this == ANTHROPIC_MESSAGES) {
        return status == 429
            ? "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\","
                + "\"message\":\"Number of request tokens has exceeded your per-minute rate limit\"}}"
            : "{\"type\":\"error\",\"error\":{\"type\":\"api_error\","
                + "\"message\":\"Internal server error\"}}";
      }
      return status == 429
          ? "{\"error\":{\"message\":\"Rate limit reached for gpt-4o\",\"type\":\"requests\","
              + "\"param\":null,\"code\":\"rate_limit_exceeded\"}}"
          : "{\"error\":{\"message\":\"The server had an error while processing your request.\","
              + "\"type\":\"server_error\",\"param\":null,\"code\":null}}";
    }

    static String answerText() {
      return " hello".repeat(DELTAS);
    }
  }

  // ------------------------------------------------------------------------------------ paths

  /** How the request ends (a row of the table). */
  enum Path {
    /** The answer ends with its last event (SSE) or its closed JSON root, usage reported. */
    RESPONSE_END,
    /**
     * The answer ends without usage (OpenAI chat / completions without {@code include_usage}, or an
     * OpenAI-compatible server that reports none); only for those two formats.
     */
    RESPONSE_END_NO_USAGE,
    /** The client goes away after {@link #DELTAS_BEFORE_CUT} text deltas (SSE) or half the JSON. */
    CLIENT_CANCEL_MID_STREAM,
    /** The client goes away after the request went upstream, before any response header. */
    CANCEL_BEFORE_RESPONSE_HEADERS,
    /**
     * The upstream ends the body early (end of stream) without the answer's last event or the
     * JSON's end: e.g. a close-delimited body whose connection closed mid-answer.
     */
    UPSTREAM_ENDS_EARLY,
    /** The upstream answers 429 (JSON column) or 500 (SSE column) with a JSON error body. */
    UPSTREAM_ERROR,
    /**
     * The upstream connection resets mid-answer. The emulator's {@link ResponseBody} has no reset
     * (a sink gets data or end of stream only); in Envoy an upstream reset after the response
     * started resets the downstream stream, and the filter's onDestroy resets the ext_proc stream:
     * Sluice sees a CANCELLED stream after a partial body, exactly as a client disconnect. So this
     * row is played as the upstream stopping in the middle of an event (a cut data line) and the
     * emulator's cancel after that partial body.
     */
    UPSTREAM_RESET_MID_STREAM
  }

  /** What the upstream answers for one cell. */
  record Script(int status, String contentType, List<String> chunks, boolean ends, boolean hold) {
    /** The response never starts (no headers): the client's cancel ends it. */
    static Script noResponse() {
      return new Script(200, "application/json", List.of(), false, true);
    }
  }

  /**
   * The upstream, scripted per cell (or per request when cells run at once). Its answers start at
   * once (headers); the test pushes the body chunks one at a time ({@link Answer#push}), each after
   * Sluice answered the one before, so each chunk is a response_body message of its own as when a
   * model streams (chunks that arrive while Envoy waits for the response_headers answer are sent as
   * one).
   */
  static final class ScriptedUpstream implements Upstream {
    volatile Function<UpstreamRequest, Script> script = r -> Script.noResponse();
    final List<UpstreamRequest> received = new CopyOnWriteArrayList<>();
    final List<Answer> answers = new CopyOnWriteArrayList<>();

    @Override
    public CompletableFuture<UpstreamResponse> send(UpstreamRequest request) {
      received.add(request);
      Script s = script.apply(request);
      if (s.hold()) {
        return new CompletableFuture<>(); // headers never come
      }
      Answer answer = new Answer(request, s);
      answers.add(answer);
      return CompletableFuture.completedFuture(
          new UpstreamResponse(
              s.status(), HttpHeaders.of("content-type", s.contentType()), answer));
    }
  }

  /** One answer's body, pushed by the test. */
  static final class Answer implements ResponseBody {
    final UpstreamRequest request;
    final Script script;
    private ResponseBody.Sink sink;
    private int next;
    volatile boolean cancelled;

    Answer(UpstreamRequest request, Script script) {
      this.request = request;
      this.script = script;
    }

    @Override
    public synchronized Runnable subscribe(Sink sink) {
      this.sink = sink;
      return () -> cancelled = true; // the rest never comes
    }

    synchronized boolean subscribed() {
      return sink != null;
    }

    /** Pushes the next chunk (the last one ends the body when the script ends); false if none. */
    synchronized boolean push() {
      List<String> chunks = script.chunks();
      if (next >= chunks.size()) {
        return false;
      }
      boolean last = next == chunks.size() - 1;
      sink.onData(chunks.get(next++).getBytes(StandardCharsets.UTF_8), last && script.ends());
      return true;
    }
  }

  /**
   * An answer cut part-way: JSON, 20 characters past its first {@code hello}; SSE, after the deltas
   * before the cut. {@code ends}: whether the body then ends (the upstream ended early) or is left
   * open (the client cancels).
   */
  private static Script cutAnswer(Format f, boolean sse, String type, boolean ends) {
    if (!sse) {
      String json = f.json(true);
      return new Script(
          200, type, List.of(json.substring(0, json.indexOf("hello") + 20)), ends, false);
    }
    return new Script(200, type, sseChunks(f, DELTAS_BEFORE_CUT, null), ends, false);
  }

  /** The scripted answer of one cell. */
  static Script script(Format f, Body b, Path p) {
    boolean sse = b == Body.SSE;
    String type = sse ? "text/event-stream" : "application/json";
    return switch (p) {
      case RESPONSE_END, RESPONSE_END_NO_USAGE -> {
        boolean usage = p == Path.RESPONSE_END;
        if (!sse) {
          String json = f.json(usage);
          int half = json.length() / 2; // two chunks: the streamed response body mode reads both
          yield new Script(
              200, type, List.of(json.substring(0, half), json.substring(half)), true, false);
        }
        yield new Script(200, type, sseChunks(f, DELTAS, f.sseTail(usage)), true, false);
      }
      case CLIENT_CANCEL_MID_STREAM -> cutAnswer(f, sse, type, false);
      case UPSTREAM_ENDS_EARLY -> cutAnswer(f, sse, type, true);
      case UPSTREAM_RESET_MID_STREAM -> {
        if (!sse) {
          String json = f.json(true);
          yield new Script(
              200, type, List.of(json.substring(0, json.indexOf("hello") + 3)), false, false);
        }
        // the next event is cut in the middle of its text: an event cut after its text would be
        // metered up to the cut (the extractor keeps what it read before a fault)
        String next = f.sseDelta();
        yield new Script(
            200,
            type,
            sseChunks(f, DELTAS_BEFORE_CUT, next.substring(0, next.indexOf(" hello") + 3)),
            false,
            false);
      }
      case CANCEL_BEFORE_RESPONSE_HEADERS -> Script.noResponse();
      case UPSTREAM_ERROR -> {
        int status = sse ? 500 : 429;
        yield new Script(status, "application/json", List.of(f.error(status)), true, false);
      }
    };
  }

  /** The preamble (with the first delta), one chunk per further delta, then {@code tail}. */
  static List<String> sseChunks(Format f, int deltas, String tail) {
    List<String> chunks = new ArrayList<>();
    chunks.add(f.ssePreamble() + f.sseDelta());
    for (int i = 1; i < deltas; i++) {
      chunks.add(f.sseDelta());
    }
    if (tail != null) {
      chunks.add(tail);
    }
    return chunks;
  }

  /** What a cell expects: the rule, the tokens charged, how the permit went back. */
  record Expected(String rule, long input, long output, String outcome, boolean overran) {}

  static Expected expected(Format f, Body b, Path p, long estInput, long estOutput) {
    boolean sse = b == Body.SSE;
    return switch (p) {
      case RESPONSE_END -> new Expected("reported", USAGE_INPUT, USAGE_OUTPUT, "completed", sse);
      case RESPONSE_END_NO_USAGE ->
          sse
              ? new Expected("streamed", estInput, f.metered(DELTAS), "completed", true)
              : new Expected("reserve", estInput, estOutput, "completed", false);
      case CLIENT_CANCEL_MID_STREAM, UPSTREAM_RESET_MID_STREAM ->
          sse
              ? new Expected(
                  "streamed",
                  f.inputReportedEarly() >= 0 ? f.inputReportedEarly() : estInput,
                  Math.max(f.outputReportedEarly(), f.metered(DELTAS_BEFORE_CUT)),
                  "cancelled",
                  true)
              : new Expected("reserve", estInput, estOutput, "cancelled", false);
      case UPSTREAM_ENDS_EARLY ->
          sse
              ? new Expected(
                  "streamed",
                  f.inputReportedEarly() >= 0 ? f.inputReportedEarly() : estInput,
                  Math.max(f.outputReportedEarly(), f.metered(DELTAS_BEFORE_CUT)),
                  "completed",
                  true)
              : new Expected("reserve", estInput, estOutput, "completed", false);
      case CANCEL_BEFORE_RESPONSE_HEADERS ->
          new Expected("no_answer", estInput, 0, "cancelled", false);
      case UPSTREAM_ERROR -> new Expected("upstream_error", 0, 0, "completed", false);
    };
  }

  static boolean applies(Format f, Path p) {
    return p != Path.RESPONSE_END_NO_USAGE
        || f == Format.OPENAI_CHAT
        || f == Format.OPENAI_COMPLETIONS;
  }

  // ------------------------------------------------------------------------------------ tests

  @ParameterizedTest
  @EnumSource(Format.class)
  void everyBodyAndPath_chargesByItsRule_releasesOnce_leavesNothingInFlight(Format f) {
    h =
        SluiceEnvoyHarness.start(
            policy(),
            SluiceEnvoyHarness.recommendedFilter().build(),
            upstream,
            clock,
            clock::nanoTime);
    for (Body b : Body.values()) {
      for (Path p : Path.values()) {
        if (applies(f, p)) {
          runCell(f, b, p);
        }
      }
    }
  }

  private void runCell(Format f, Body b, Path p) {
    String cell = f + " × " + b + " × " + p;
    Script script = script(f, b, p);
    upstream.script = r -> script;
    Counts before = Counts.of(h, SluiceEnvoyHarness.POOL);
    long sent = h.stats().streamMsgsSent();
    int upstreamBefore = upstream.received.size();

    HttpRequest.Builder req =
        HttpRequest.post(f.path, f.request(b == Body.SSE, p != Path.RESPONSE_END_NO_USAGE))
            .routeGrpcInitialMetadata("x-sluice-tenant", "acme");
    boolean midStream = p == Path.CLIENT_CANCEL_MID_STREAM || p == Path.UPSTREAM_RESET_MID_STREAM;
    if (midStream) {
      req.cancelAfter(Duration.ofMillis(1)); // virtual: fires when the clock is advanced below
    } else if (p == Path.CANCEL_BEFORE_RESPONSE_HEADERS) {
      req.cancelAfter(HttpRequest.Phase.UPSTREAM_REQUEST_SENT);
    }
    int answersBefore = upstream.answers.size();
    CompletableFuture<HttpResult> exchange = h.sendAsync(req.build());
    if (!script.hold()) {
      // request headers, request body, response headers, then one message per body chunk; a cut
      // comes once Sluice answered all of them (it reads each chunk before answering it)
      await()
          .atMost(Duration.ofSeconds(5))
          .pollInterval(Duration.ofMillis(1))
          .until(() -> upstream.answers.size() > answersBefore);
      Answer answer = upstream.answers.get(answersBefore);
      long n = sent + 3;
      awaitAnswered(n);
      while (answer.push()) {
        awaitAnswered(++n);
      }
    }
    if (midStream) {
      clock.advance(Duration.ofMillis(1));
    }
    HttpResult r = SluiceEnvoyHarness.result(exchange);

    assertThat(upstream.received).as(cell).hasSize(upstreamBefore + 1);
    UpstreamRequest up = upstream.received.get(upstreamBefore);
    Matcher est = ESTIMATE.matcher(up.headers().first("x-sluice-estimate").orElseThrow());
    assertThat(est.matches()).as(cell + ": x-sluice-estimate").isTrue();
    long estInput = Long.parseLong(est.group(1));
    long estOutput = Long.parseLong(est.group(2));
    assertThat(estOutput).as(cell + ": output reserve").isEqualTo(MAX_TOKENS);
    Expected x = expected(f, b, p, estInput, estOutput);

    if (p == Path.RESPONSE_END
        || p == Path.RESPONSE_END_NO_USAGE
        || p == Path.UPSTREAM_ENDS_EARLY
        || p == Path.UPSTREAM_ERROR) {
      assertThat(r.outcome()).as(cell).isEqualTo(HttpResult.Outcome.UPSTREAM_RESPONSE);
      assertThat(r.status()).as(cell).isEqualTo(script.status());
      assertThat(r.bodyUtf8()).as(cell).isEqualTo(String.join("", script.chunks()));
    } else {
      assertThat(r.outcome()).as(cell).isEqualTo(HttpResult.Outcome.CLIENT_CANCELLED);
    }
    if (midStream) {
      assertThat(r.bodyUtf8()).as(cell + ": the cut").isEqualTo(String.join("", script.chunks()));
    }

    assertCharged(cell, SluiceEnvoyHarness.POOL, before, x, estInput, estOutput, true);
    h.awaitNothingInFlight();
    assertThat(h.gauge("sluice.pool.work.overrun", "pool", SluiceEnvoyHarness.POOL))
        .as(cell + ": overrun left in flight")
        .isZero();
  }

  /**
   * {@code response_body_mode: NONE}: Envoy sends Sluice no body, the permit goes back at the
   * response headers (outcome completed) and nothing of the answer is seen: the reservation stands,
   * whatever the answer reported.
   */
  @ParameterizedTest
  @EnumSource(Format.class)
  void responseBodyModeNone_reservationStands(Format f) {
    h =
        SluiceEnvoyHarness.start(
            policy(),
            SluiceEnvoyHarness.recommendedFilter()
                .responseBodyMode(FilterConfig.BodyMode.NONE)
                .build(),
            upstream,
            clock,
            clock::nanoTime);
    for (Body b : Body.values()) {
      String cell = f + " × " + b + " × RESPONSE_BODY_MODE_NONE";
      Script script = script(f, b, Path.RESPONSE_END);
      upstream.script = r -> script;
      Counts before = Counts.of(h, SluiceEnvoyHarness.POOL);
      long sent = h.stats().streamMsgsSent();
      int answersBefore = upstream.answers.size();
      CompletableFuture<HttpResult> exchange =
          h.sendAsync(
              HttpRequest.post(f.path, f.request(b == Body.SSE, true))
                  .routeGrpcInitialMetadata("x-sluice-tenant", "acme")
                  .build());
      await().until(() -> upstream.answers.size() > answersBefore);
      Answer answer = upstream.answers.get(answersBefore);
      awaitAnswered(sent + 3); // request headers, request body, response headers
      while (answer.push()) {
        // the body passes Envoy by: no message to Sluice
      }
      HttpResult r = SluiceEnvoyHarness.result(exchange);
      assertThat(r.outcome()).as(cell).isEqualTo(HttpResult.Outcome.UPSTREAM_RESPONSE);
      assertThat(r.bodyUtf8()).as(cell).isEqualTo(String.join("", script.chunks()));
      assertThat(h.stats().streamMsgsSent() - sent).as(cell + ": messages").isEqualTo(3);
      UpstreamRequest up = answer.request;
      Matcher est = ESTIMATE.matcher(up.headers().first("x-sluice-estimate").orElseThrow());
      assertThat(est.matches()).as(cell).isTrue();
      long estInput = Long.parseLong(est.group(1));
      long estOutput = Long.parseLong(est.group(2));
      assertCharged(
          cell,
          SluiceEnvoyHarness.POOL,
          before,
          new Expected("reserve", estInput, estOutput, "completed", false),
          estInput,
          estOutput,
          true);
      h.awaitNothingInFlight();
    }
  }

  /** Waits until Sluice answered every message the emulator sent, and at least {@code n} sent. */
  private void awaitAnswered(long n) {
    await()
        .atMost(Duration.ofSeconds(5))
        .pollDelay(Duration.ZERO)
        .pollInterval(Duration.ofMillis(1))
        .until(
            () ->
                h.stats().streamMsgsSent() >= n
                    && h.stats().streamMsgsReceived() == h.stats().streamMsgsSent());
  }

  /** The charge, reconciliation, overrun and release of one cell, on {@code pool}. */
  private void assertCharged(
      String cell,
      String pool,
      Counts before,
      Expected x,
      long estInput,
      long estOutput,
      boolean reconciled) {
    await()
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(
            () ->
                assertThat(
                        Counts.of(h, pool).released.get(x.outcome())
                            - before.released.get(x.outcome()))
                    .as(cell + ": released " + x.outcome())
                    .isEqualTo(1));
    await()
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(
            () -> {
              Counts now = Counts.of(h, pool);
              Map<String, Double> charged = new LinkedHashMap<>();
              for (String key : now.charged.keySet()) {
                charged.put(key, now.charged.get(key) - before.charged.get(key));
              }
              Map<String, Double> want = new LinkedHashMap<>();
              for (String rule : RULES) {
                want.put(rule + "/input", rule.equals(x.rule()) ? (double) x.input() : 0.0);
                want.put(rule + "/output", rule.equals(x.rule()) ? (double) x.output() : 0.0);
              }
              assertThat(charged)
                  .as(cell + ": sluice.tokens.charged (rule/direction)")
                  .isEqualTo(want);
              if (!reconciled) {
                return; // cells running at once: the reconciliation counters carry no pool
              }
              // the tenant's buckets: the reservation reconciled to the charge (the reserve rule
              // leaves the reservation standing: nothing reconciled)
              long net = net(x, estInput, estOutput);
              assertThat(now.refunded - before.refunded)
                  .as(cell + ": tokens refunded to the tenant")
                  .isEqualTo((double) Math.max(0, -net));
              assertThat(now.overcharged - before.overcharged)
                  .as(cell + ": tokens overcharged to the tenant")
                  .isEqualTo((double) Math.max(0, net));
            });
    Counts after = Counts.of(h, pool);
    assertThat(after.releasedAny - before.releasedAny).as(cell + ": permits released").isEqualTo(1);
    assertThat(after.overruns - before.overruns)
        .as(cell + ": sluice.output.overruns (stream past its reserve)")
        .isEqualTo(x.overran() ? 1 : 0);
    double grew = after.overrunWork - before.overrunWork;
    if (x.overran()) {
      assertThat(grew).as(cell + ": work grown in flight (overrun work units)").isPositive();
    } else {
      assertThat(grew).as(cell + ": work grown in flight (overrun work units)").isZero();
    }
  }

  /** Charged minus reserved (the reserve rule reconciles nothing). */
  static long net(Expected x, long estInput, long estOutput) {
    return x.rule().equals("reserve") ? 0 : (x.input() - estInput) + (x.output() - estOutput);
  }

  /** The counters a cell reads before and after. */
  record Counts(
      Map<String, Double> released,
      double releasedAny,
      Map<String, Double> charged,
      double refunded,
      double overcharged,
      double overruns,
      double overrunWork) {
    static Counts of(SluiceEnvoyHarness h, String pool) {
      Map<String, Double> released = new LinkedHashMap<>();
      for (String o : new String[] {"completed", "cancelled", "error", "shutdown"}) {
        released.put(o, h.counter("sluice.permits.released", "pool", pool, "outcome", o));
      }
      Map<String, Double> charged = new LinkedHashMap<>();
      for (String rule : RULES) {
        for (String d : new String[] {"input", "output"}) {
          charged.put(
              rule + "/" + d,
              h.counter("sluice.tokens.charged", "pool", pool, "rule", rule, "direction", d));
        }
      }
      return new Counts(
          released,
          h.counter("sluice.permits.released", "pool", pool),
          charged,
          h.counter("sluice.quota.reconciled.tokens", "direction", "refunded"),
          h.counter("sluice.quota.reconciled.tokens", "direction", "overcharged"),
          h.counter("sluice.output.overruns", "pool", pool),
          h.counter("sluice.output.overrun.work.units", "pool", pool));
    }
  }

  /**
   * Server shutdown mid-stream, every format and body at once (one pool each, so each cell's
   * counters are its own): Sluice is closed while the answers are held open; each permit goes back
   * once as {@code shutdown}, charged by the rule of a cut answer.
   */
  @Test
  void serverShutdownMidStream_everyFormatAndBody_chargedAsCut_releasedOnceAsShutdown() {
    h =
        SluiceEnvoyHarness.start(
            policy(),
            SluiceEnvoyHarness.recommendedFilter().build(),
            upstream,
            clock,
            clock::nanoTime);
    Map<String, Script> scripts = new LinkedHashMap<>();
    Map<Format, Map<Body, CompletableFuture<HttpResult>>> exchanges = new EnumMap<>(Format.class);
    Map<String, Counts> before = new LinkedHashMap<>();
    long sent = h.stats().streamMsgsSent();
    long expectMessages = 0;
    for (Format f : Format.values()) {
      for (Body b : Body.values()) {
        Script s = script(f, b, Path.CLIENT_CANCEL_MID_STREAM); // held open after some chunks
        scripts.put(f.path + "|" + (b == Body.SSE), s);
        before.put(shutdownPool(f, b), Counts.of(h, shutdownPool(f, b)));
        expectMessages += 3;
      }
    }
    upstream.script = r -> scripts.get(r.path() + "|" + r.bodyUtf8().contains("\"stream\":true"));
    for (Format f : Format.values()) {
      for (Body b : Body.values()) {
        exchanges
            .computeIfAbsent(f, k -> new EnumMap<>(Body.class))
            .put(
                b,
                h.sendAsync(
                    HttpRequest.post(f.path, f.request(b == Body.SSE, true))
                        .routeGrpcInitialMetadata("x-sluice-tenant", "acme")
                        .routeGrpcInitialMetadata("x-sluice-pool", shutdownPool(f, b))
                        .build()));
      }
    }
    long n = sent + expectMessages;
    awaitAnswered(n); // every answer's headers went through Sluice
    for (Answer a : upstream.answers) { // then each body, a chunk at a time
      assertThat(a.subscribed()).isTrue();
      while (a.push()) {
        awaitAnswered(++n);
      }
    }
    Counts all = Counts.of(h, SluiceEnvoyHarness.POOL); // the reconciliation counters, before

    h.stopSluice();

    long refunded = 0;
    long overcharged = 0;
    for (Format f : Format.values()) {
      for (Body b : Body.values()) {
        String cell = f + " × " + b + " × SERVER_SHUTDOWN_MID_STREAM";
        String pool = shutdownPool(f, b);
        HttpResult r = SluiceEnvoyHarness.result(exchanges.get(f).get(b));
        assertThat(r.status()).as(cell + ": the answer had started").isEqualTo(200);
        UpstreamRequest up =
            upstream.received.stream()
                .filter(
                    u ->
                        u.path().equals(f.path)
                            && u.bodyUtf8().contains("\"stream\":" + (b == Body.SSE)))
                .findFirst()
                .orElseThrow();
        Matcher est = ESTIMATE.matcher(up.headers().first("x-sluice-estimate").orElseThrow());
        assertThat(est.matches()).as(cell).isTrue();
        long estInput = Long.parseLong(est.group(1));
        long estOutput = Long.parseLong(est.group(2));
        Expected cut = expected(f, b, Path.CLIENT_CANCEL_MID_STREAM, estInput, estOutput);
        Expected x = new Expected(cut.rule(), cut.input(), cut.output(), "shutdown", cut.overran());
        assertCharged(cell, pool, before.get(pool), x, estInput, estOutput, false);
        long net = net(x, estInput, estOutput);
        refunded += Math.max(0, -net);
        overcharged += Math.max(0, net);
        var snapshot =
            h.server
                .runtime()
                .controller()
                .pool(pool)
                .snapshot(h.server.runtime().ticker().nanos());
        assertThat(snapshot.requestsInFlight()).as(cell + ": requests in flight").isZero();
        assertThat(snapshot.workInFlight()).as(cell + ": work in flight").isZero();
        assertThat(h.server.runtime().controller().pool(pool).overrunWork())
            .as(cell + ": overrun in flight")
            .isZero();
      }
    }
    Counts end = Counts.of(h, SluiceEnvoyHarness.POOL);
    assertThat(end.refunded - all.refunded)
        .as("tokens refunded to the tenant")
        .isEqualTo((double) refunded);
    assertThat(end.overcharged - all.overcharged)
        .as("tokens overcharged to the tenant")
        .isEqualTo((double) overcharged);
  }
}
