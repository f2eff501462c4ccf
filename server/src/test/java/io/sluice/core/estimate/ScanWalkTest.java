package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonFactory;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The prompt tallied during the scan ({@link ScanWalk}) is the walk's: over seeded hostile bodies
 * and bodies written to give it up (duplicates, the model after the prompt, wrong types, tools,
 * {@code input}), each read with every known format, one pass and two passes end the same way — the
 * same failure, the same {@link BodyScan}, the same tally.
 */
class ScanWalkTest {
  private static final EstimatorSettings SETTINGS = EstimatorSettings.defaults();
  private static final JsonFactory FACTORY = TokenEstimator.newJsonFactory(SETTINGS.maxJsonDepth());
  private static final ModelEncodings ENCODINGS = new ModelEncodings();
  private static final RequestFormat[] FORMATS = {
    RequestFormat.OPENAI_CHAT,
    RequestFormat.ANTHROPIC_MESSAGES,
    RequestFormat.OPENAI_RESPONSES,
    RequestFormat.OPENAI_COMPLETIONS,
    RequestFormat.OPENAI_EMBEDDINGS
  };

  private static final String[] WRITTEN = {
    "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}",
    "{\"messages\":[{\"role\":\"user\",\"content\":\"model after\"}],\"model\":\"gpt-4o\"}",
    "{\"model\":\"claude-sonnet-4-5\",\"system\":\"be brief\",\"messages\":[{\"role\":\"user\","
        + "\"content\":[{\"type\":\"text\",\"text\":\"hi\"},{\"type\":\"image\"}]}],\"tools\":"
        + "[{\"name\":\"a\",\"input_schema\":{}}],\"max_tokens\":9}",
    "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"one\"}],"
        + "\"messages\":[{\"role\":\"user\",\"content\":\"two, the last\"}]}",
    "{\"model\":\"gpt-4o\",\"messages\":[],\"messages\":null}",
    "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
        + "\"model\":\"claude-sonnet-4-5\"}",
    "{\"model\":\"gpt-4o\",\"messages\":{\"role\":\"user\"},\"max_tokens\":\"x\"}",
    "{\"model\":\"gpt-4o\",\"messages\":[1,2],\"stream\":true,}",
    "{\"model\":\"gpt-4o\",\"messages\":[{\"content\":[[[[[]]]]]}]}",
    "{\"model\":\"gpt-4o\",\"tools\":7,\"functions\":[{\"name\":\"f\"},3,\"s\"],\"messages\":"
        + "[{\"role\":\"user\",\"content\":\"t\"}],\"tool_choice\":{\"type\":\"function\"}}",
    "{\"model\":\"gpt-4o\",\"input\":[\"a\",{\"role\":\"user\",\"content\":\"b\"}],"
        + "\"instructions\":\"i\",\"tools\":[]}",
    "{\"model\":\"gpt-4o\",\"instructions\":5,\"input\":\"x\"}",
    "{\"model\":\"text-embedding-3-small\",\"input\":[[1,2],[3]],\"prompt\":[\"p\",[4,5]]}",
    "{\"model\":\"gpt-4o\",\"prompt\":{\"no\":1}}",
    "{\"model\":null,\"messages\":[{\"role\":\"user\",\"content\":\"m\"}]}",
    "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"truncated\"}",
    "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]} extra",
    "{}",
    "",
  };

  @Test
  void onePassReadsAsTwoPasses() throws Exception {
    List<byte[]> bodies = new ArrayList<>();
    for (String w : WRITTEN) {
      bodies.add(w.getBytes(StandardCharsets.UTF_8));
    }
    for (HostileBodies.Body b : HostileBodies.generate(20261205L, 1500)) {
      bodies.add(b.bytes());
    }
    int tallied = 0;
    for (byte[] body : bodies) {
      if (!Utf8.isValid(body, 0, body.length)) {
        continue; // never read: the estimate falls back before either pass
      }
      for (RequestFormat f : FORMATS) {
        String one = read(body, f, true);
        String two = read(body, f, false);
        assertThat(one).as("%s %s", f, new String(body, StandardCharsets.UTF_8)).isEqualTo(two);
        tallied += one.contains("tokens=") ? 1 : 0;
      }
    }
    assertThat(tallied).isGreaterThan(1000);
  }

  /** How the body reads: the failure, or the scan's fields, whether it read input, the tally. */
  private static String read(byte[] body, RequestFormat f, boolean onePass) {
    RequestBodyReader r = new RequestBodyReader(FACTORY, body, 0, body.length, SETTINGS);
    try {
      ScanWalk on =
          onePass ? new ScanWalk(f, ENCODINGS, TokenCountCache.disabled(), SETTINGS) : null;
      BodyScan scan = r.scan(on);
      if (scan.empty) {
        return "empty";
      }
      TokenTally tally = on == null ? null : on.result(scan.model);
      boolean read;
      if (on != null && tally != null) {
        read = r.finish(f, on.sawInput(), tally);
      } else {
        tally =
            new TokenTally(
                ENCODINGS.forModel(scan.model),
                TokenCountCache.disabled(),
                SETTINGS.bytesPerToken(),
                SETTINGS.maxTokenizeChars());
        read = r.walk(f, tally);
      }
      return fields(scan) + " read=" + read + " tokens=" + tally.tokens();
    } catch (ReadFailure e) {
      return "failure " + e.fallbackCause();
    } catch (Exception e) {
      return "exception " + e.getClass().getSimpleName();
    }
  }

  static String fields(Object o) throws IllegalAccessException {
    StringBuilder b = new StringBuilder(o.getClass().getSimpleName()).append('{');
    for (Field fd : o.getClass().getDeclaredFields()) {
      if (Modifier.isStatic(fd.getModifiers())) {
        continue;
      }
      fd.setAccessible(true);
      Object v = fd.get(o);
      b.append(fd.getName()).append('=');
      if (v instanceof ToolScan || v instanceof Unreadable) {
        b.append(fields(v));
      } else {
        b.append(v);
      }
      b.append(' ');
    }
    return b.append('}').toString();
  }
}
