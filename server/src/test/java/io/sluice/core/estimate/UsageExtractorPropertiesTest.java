package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.testing.Seeded;
import java.util.List;
import org.junit.jupiter.api.Test;

class UsageExtractorPropertiesTest {

  record Chunks(List<byte[]> chunks, boolean sse) {
    @Override
    public String toString() {
      return "Chunks[chunks=" + Seeded.describe(chunks) + ", sse=" + sse + "]";
    }
  }

  @Test
  void onChunk_arbitraryBytes_neverThrows() {
    Seeded.forAll(
        0x5EED_1101L,
        300,
        g -> new Chunks(g.list(0, 8, () -> g.bytes(200)), g.bool()),
        c -> {
          UsageExtractor extractor =
              UsageExtractor.forResponse(c.sse() ? "text/event-stream" : null);

          for (byte[] chunk : c.chunks()) {
            extractor.onChunk(chunk, 0, chunk.length);
          }
          extractor.onEnd();

          Usage usage = extractor.usage();
          assertThat(usage.inputTokens()).isNotNegative();
          assertThat(usage.outputTokens()).isNotNegative();
        });
  }

  record Split(int a, int b) {}

  @Test
  void onChunk_randomThreeWaySplit_sameUsage() {
    byte[] body = Fixtures.bytes("anthropic-stream.sse");
    Seeded.forAll(
        0x5EED_1102L,
        100,
        g -> new Split(g.intBetween(0, 10_000), g.intBetween(0, 10_000)),
        c -> {
          int first = Math.min(c.a(), c.b()) % (body.length + 1);
          int second = Math.max(first, Math.max(c.a(), c.b()) % (body.length + 1));
          UsageExtractor extractor = UsageExtractor.forResponse("text/event-stream");

          extractor.onChunk(body, 0, first);
          extractor.onChunk(body, first, second - first);
          extractor.onChunk(body, second, body.length - second);
          extractor.onEnd();

          assertThat(extractor.usage()).isEqualTo(new Usage(472 + 2048, 15, 2048, true));
        });
  }

  record Whole(int fixture, int where, byte replacement, boolean damage, int cut, int split) {}

  /**
   * A body that arrives whole (read by the blocking parser) reports exactly what the same bytes fed
   * to the non-blocking parser in two chunks report, for the JSON responses of every provider, with
   * one byte replaced and the body cut anywhere (malformed and truncated bodies included).
   */
  @Test
  void onLastChunk_wholeBody_sameUsageAsChunked() {
    Seeded.forAll(
        0x5EED_1103L,
        1000,
        g ->
            new Whole(
                g.intBetween(0, 2),
                g.intBetween(0, 100_000),
                g.anyByte(),
                g.bool(),
                g.intBetween(0, 100_000),
                g.intBetween(0, 100_000)),
        c -> {
          byte[] body =
              Fixtures.bytes(
                  List.of(
                          "openai-chat-response.json",
                          "anthropic-response.json",
                          "openai-responses-response.json")
                      .get(c.fixture()));
          if (c.damage()) {
            body[c.where() % body.length] = c.replacement();
          }
          int length = c.cut() % (body.length + 1);
          int first = c.split() % (length + 1);

          UsageExtractor whole = UsageExtractor.forResponse("application/json");
          whole.onLastChunk(body, 0, length);
          UsageExtractor chunked = UsageExtractor.forResponse("application/json");
          chunked.onChunk(body, 0, first);
          chunked.onChunk(body, first, length - first);
          chunked.onEnd();

          assertThat(whole.usage()).isEqualTo(chunked.usage());
        });
  }

  @Test
  void onLastChunk_arbitraryBytes_sameUsageAsOnChunkThenOnEnd() {
    Seeded.forAll(
        0x5EED_1104L,
        300,
        g -> g.bytes(300),
        body -> {
          UsageExtractor whole = UsageExtractor.forResponse(null);
          whole.onLastChunk(body, 0, body.length);
          UsageExtractor fed = UsageExtractor.forResponse(null);
          fed.onChunk(body, 0, body.length);
          fed.onEnd();
          assertThat(whole.usage()).isEqualTo(fed.usage());
        });
  }
}
