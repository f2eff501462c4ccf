package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonFactory;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A chat body read from its bytes ({@link ChatScan}) reads as the Jackson read does: over seeded
 * hostile bodies, generated chat bodies (escapes, non-ASCII text at every offset of the string
 * scan's strides, parts, tool calls, tools, every scalar member, model names of one table slot) and
 * a chat body cut at every byte and with every byte changed, each as OpenAI chat and as Anthropic
 * messages, the estimate and the output shape are equal with and without the plain read, and where
 * the plain read accepts a body its scan and tally are the Jackson read's field by field.
 */
class ChatScanTest {
  private static final EstimatorSettings SETTINGS = EstimatorSettings.defaults();
  private static final JsonFactory FACTORY = TokenEstimator.newJsonFactory(SETTINGS.maxJsonDepth());
  private static final ModelEncodings ENCODINGS = new ModelEncodings();
  private static final TokenEstimator PLAIN = TokenEstimator.uncached(SETTINGS);
  private static final TokenEstimator JACKSON = PLAIN.plainReads(false);
  private static final EstimateLimits LIMITS = new EstimateLimits(512, 4096);
  private static final RequestFormat[] FORMATS = {
    RequestFormat.OPENAI_CHAT, RequestFormat.ANTHROPIC_MESSAGES
  };

  static final String CHAT =
      "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":256,\"temperature\":0.2,\"stream\":false,"
          + "\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\\nSay \\\"no\\\" when"
          + " unsure \\u00e9\\ud83d\\ude00.\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\","
          + "\"text\":\"caf\u00e9 \u4e2d \ud83d\ude00\"},{\"type\":\"image_url\",\"image_url\":"
          + "{\"url\":\"x\"}}]},{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":"
          + "\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
          + "{\"role\":\"tool\",\"name\":\"f\",\"content\":\"42\"}],\"tools\":[{\"type\":"
          + "\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\"}}}],"
          + "\"tool_choice\":\"auto\",\"n\":2,\"metadata\":{\"a\":[1,-2.5e3,true,null]}}";

  @Test
  void everyBodyReadsAsWithJackson() throws Exception {
    List<byte[]> bodies = new ArrayList<>();
    for (HostileBodies.Body b : HostileBodies.generate(20261206L, 1500)) {
      bodies.add(b.bytes());
    }
    Random r = new Random(20261206L);
    for (int i = 0; i < 1500; i++) {
      bodies.add(chat(r));
    }
    byte[] chat = CHAT.getBytes(StandardCharsets.UTF_8);
    byte[] changes = {
      '"',
      '\\',
      '{',
      '}',
      '[',
      ']',
      ',',
      ':',
      ' ',
      '0',
      '-',
      'e',
      '.',
      'n',
      'x',
      0,
      0x1F,
      0x7F,
      (byte) 0x80,
      (byte) 0xC3,
      (byte) 0xED,
      (byte) 0xF4,
      (byte) 0xFF
    };
    for (int at = 0; at <= chat.length; at++) {
      bodies.add(java.util.Arrays.copyOf(chat, at));
      for (int k = 0; at < chat.length && k < changes.length; k++) {
        byte[] changed = chat.clone();
        changed[at] = changes[k];
        bodies.add(changed);
      }
    }
    int plain = 0;
    for (byte[] body : bodies) {
      for (RequestFormat f : FORMATS) {
        String text = new String(body, StandardCharsets.ISO_8859_1);
        OutputShape a = new OutputShape();
        OutputShape b = new OutputShape();
        TokenEstimate withPlain = PLAIN.estimate(f, body, 0, body.length, LIMITS, a);
        TokenEstimate withJackson = JACKSON.estimate(f, body, 0, body.length, LIMITS, b);
        assertThat(withPlain).as("%s %s", f, text).isEqualTo(withJackson);
        assertThat(ScanWalkTest.fields(a)).as("%s %s", f, text).isEqualTo(ScanWalkTest.fields(b));
        String read = plainRead(body, f);
        if (read != null) {
          plain++;
          assertThat(read).as("%s %s", f, text).isEqualTo(jacksonRead(body, f));
        }
      }
    }
    assertThat(plain).as("bodies the plain read took").isGreaterThan(3000);
  }

  @Test
  void theFloorsBodyIsReadPlain() throws Exception {
    byte[] chat = CHAT.getBytes(StandardCharsets.UTF_8);
    String read = plainRead(chat, RequestFormat.OPENAI_CHAT);
    assertThat(read).isNotNull().isEqualTo(jacksonRead(chat, RequestFormat.OPENAI_CHAT));
    // offsets inside a larger array (a body read in place from the wire)
    byte[] framed = new byte[chat.length + 20];
    System.arraycopy(chat, 0, framed, 7, chat.length);
    assertThat(PLAIN.estimate(RequestFormat.OPENAI_CHAT, framed, 7, chat.length, LIMITS))
        .isEqualTo(JACKSON.estimate(RequestFormat.OPENAI_CHAT, chat, LIMITS));
  }

  @Test
  void toolMembersInAnyOrderReadIntoOneToolScan_aBodyWithoutThemReadsNone() throws Exception {
    String tools = "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]";
    String choice = "\"tool_choice\":\"required\",\"parallel_tool_calls\":false";
    String messages = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    FanOut forced = new FanOut(1, true, false);
    for (String body :
        List.of(
            "{\"model\":\"claude-sonnet-4-5\"," + choice + "," + tools + "," + messages + "}",
            "{\"model\":\"claude-sonnet-4-5\"," + tools + "," + messages + "," + choice + "}")) {
      for (BodyScan scan : bothReads(body)) {
        assertThat(scan.tools()).as(body).isEqualTo(1);
        assertThat(scan.fanOut(RequestFormat.OPENAI_CHAT)).as(body).isEqualTo(forced);
      }
    }
    for (String body :
        List.of(
            "{\"model\":\"claude-sonnet-4-5\"," + messages + "}",
            "{\"model\":\"claude-sonnet-4-5\","
                + choice
                + ","
                + messages
                + "}")) { // a choice, no tools
      for (BodyScan scan : bothReads(body)) {
        assertThat(scan.tools()).as(body).isZero();
        assertThat(scan.fanOut(RequestFormat.OPENAI_CHAT)).as(body).isSameAs(FanOut.NONE);
      }
    }
  }

  /** {@code body}'s scan by the plain read (which must take it) and by the Jackson read. */
  private static List<BodyScan> bothReads(String body) throws Exception {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    ScanWalk on =
        new ScanWalk(RequestFormat.OPENAI_CHAT, ENCODINGS, TokenCountCache.disabled(), SETTINGS);
    BodyScan plain = ChatScan.read(on, b, 0, b.length, SETTINGS, FACTORY.streamReadConstraints());
    assertThat(plain).as("read plain: %s", body).isNotNull();
    ScanWalk walk =
        new ScanWalk(RequestFormat.OPENAI_CHAT, ENCODINGS, TokenCountCache.disabled(), SETTINGS);
    return List.of(plain, new RequestBodyReader(FACTORY, b, 0, b.length, SETTINGS).scan(walk));
  }

  /** The plain read's scan and tally, or null when it hands the body to Jackson. */
  private static String plainRead(byte[] body, RequestFormat f) throws Exception {
    ScanWalk on = new ScanWalk(f, ENCODINGS, TokenCountCache.disabled(), SETTINGS);
    BodyScan scan =
        ChatScan.read(on, body, 0, body.length, SETTINGS, FACTORY.streamReadConstraints());
    if (scan == null) {
      return null;
    }
    assertThat(Utf8.isValid(body, 0, body.length)).as("read plain: valid UTF-8").isTrue();
    return result(scan, on);
  }

  private static String jacksonRead(byte[] body, RequestFormat f) throws Exception {
    ScanWalk on = new ScanWalk(f, ENCODINGS, TokenCountCache.disabled(), SETTINGS);
    BodyScan scan = new RequestBodyReader(FACTORY, body, 0, body.length, SETTINGS).scan(on);
    return result(scan, on);
  }

  private static String result(BodyScan scan, ScanWalk on) throws Exception {
    TokenTally t = on.result(scan.model);
    String tally =
        t == null
            ? "walk"
            : t.tokens() + "/" + t.textBytes() + "/" + t.textChars() + "/" + t.fixedTokens();
    return ScanWalkTest.fields(scan) + " input=" + on.sawInput() + " tally=" + tally;
  }

  private static final String[] MODELS = {
    "\"claude-sonnet-4-5\"",
    "\"llama-3\"",
    "\"gpt-4o\"",
    "null",
    "5",
    "\"cl\\u0061ude\"",
    "\"m\u00e9\"",
    // names of one length, first and last byte (one slot of ModelEncodings.name's table)
    "\"gxt-4o\"",
    "\"mabx\"",
    "\"m\u00e9x\"",
    "\"m\u00e9\u00e9x\""
  };
  private static final String[] TEXTS = {
    "\"hello there\"",
    "\"\"",
    "\"line\\nbreak \\\"q\\\" \\\\ \\/ \\b\\f\\r\\t\"",
    "\"caf\u00e9 \u4e2d\u6587 \ud83d\ude00\"",
    "\"\\u00e9\\u4e2d\\ud83d\\ude00\\ud800x\\udc00\"",
    "\"" + "long plain ascii text ".repeat(9) + "\"",
    "\"bad \\x escape\"",
    "\"\\u12g4\"",
    "null",
    "7",
    "[{\"type\":\"text\",\"text\":\"part\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"u\"}}]",
    "[\"s\",null,{\"type\":\"input_audio\"},{\"type\":\"fi\\u006ce\"}]",
    "[1]",
    "{\"type\":\"document\",\"text\":\"d\"}",
    "[{\"type\":\"thinking\",\"thinking\":\"t\",\"summary\":[{\"text\":\"s\"}]}]"
  };
  private static final String[] MEMBERS = {
    "\"stream\":true",
    "\"stream\":null",
    "\"stream\":\"yes\"",
    "\"max_tokens\":0",
    "\"max_tokens\":-7",
    "\"max_tokens\":99999999999999999",
    "\"max_tokens\":1e3",
    "\"max_completion_tokens\":12",
    "\"n\":129",
    "\"n\":null",
    "\"best_of\":3",
    "\"temperature\":0.7",
    "\"temperature\":-0",
    "\"top_p\":01",
    "\"seed\":1.",
    "\"user\":\"u\"",
    "\"system\":\"be kind\"",
    "\"system\":[{\"type\":\"text\",\"text\":\"sys\"}]",
    "\"system\":null",
    "\"system\":3",
    "\"tools\":[{\"name\":\"a\",\"input_schema\":{}}]",
    "\"tools\":[]",
    "\"tools\":null",
    "\"functions\":[{\"name\":\"f\"},\"s\",3]",
    "\"tool_choice\":\"required\"",
    "\"tool_choice\":\"weird\"",
    "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}",
    "\"tool_choice\":null",
    "\"parallel_tool_calls\":false",
    "\"stop_sequences\":[\"x\"]",
    "\"instructions\":\"i\"",
    "\"prompt\":[\"p\"]",
    "\"input\":\"x\"",
    "\"metadata\":" + HostileBodies.deep(63),
    "\"metadata\":" + HostileBodies.deep(64),
    "\"metadata\":{\"k\":[1,2,{\"z\":false}],\"\u00e9\":\"\u00e9\"}",
    "\"x\":tru",
    "\"x\":nulls",
    "\"mod\\u0065l\":\"gpt-4o\""
  };

  private static final String[] ODD = {
    "\\n",
    "\\\"",
    "\\u00e9",
    "\\ud83d\\ude00",
    "\u00e9",
    "\u4e2d",
    "\ud83d\ude00",
    "\u0001",
    "\u007f"
  };

  /**
   * A string of plain runs of random lengths (0 to 40 bytes) between escapes, characters outside
   * ASCII or a control character: each at any place of the eight- and sixteen-byte strides.
   */
  private static String text(Random r) {
    StringBuilder t = new StringBuilder("\"");
    int pieces = r.nextInt(4);
    for (int i = 0; i <= pieces; i++) {
      t.append("abcdefghijklmnopqrstuvwxyz0123456789 ,.;", 0, r.nextInt(41));
      if (i < pieces) {
        t.append(ODD[r.nextInt(ODD.length)]);
      }
    }
    return t.append('"').toString();
  }

  /** A chat body from {@code r}: a model, messages of varied content, some other members. */
  private static byte[] chat(Random r) {
    List<String> members = new ArrayList<>();
    if (r.nextInt(8) != 0) {
      members.add("\"model\":" + MODELS[r.nextInt(MODELS.length)]);
    }
    StringBuilder m = new StringBuilder("\"messages\":[");
    int count = r.nextInt(4);
    for (int i = 0; i < count; i++) {
      m.append(i > 0 ? "," : "").append("{\"role\":\"user\",\"content\":");
      m.append(r.nextInt(3) == 0 ? text(r) : TEXTS[r.nextInt(TEXTS.length)]);
      if (r.nextInt(4) == 0) {
        m.append(",\"tool_calls\":[{\"function\":{\"arguments\":\"{}\"}}],\"name\":\"n\"");
      }
      m.append('}');
    }
    members.add(r.nextInt(20) == 0 ? "\"messages\":null" : m.append(']').toString());
    int k = r.nextInt(5);
    for (int i = 0; i < k; i++) {
      members.add(r.nextInt(members.size() + 1), MEMBERS[r.nextInt(MEMBERS.length)]);
    }
    String ws = r.nextInt(4) == 0 ? " \n\t" : "";
    String json = ws + "{" + ws + String.join("," + ws, members) + ws + "}" + ws;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
    out.write(bytes, 0, bytes.length);
    return out.toByteArray();
  }
}
