package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

class UsageExtractorPropertiesTest {

  @Property(tries = 300)
  void onChunk_arbitraryBytes_neverThrows(
      @ForAll @Size(max = 8) List<@Size(max = 200) byte[]> chunks, @ForAll boolean sse) {
    UsageExtractor extractor = UsageExtractor.forResponse(sse ? "text/event-stream" : null);

    for (byte[] chunk : chunks) {
      extractor.onChunk(chunk, 0, chunk.length);
    }
    extractor.onEnd();

    Usage usage = extractor.usage();
    assertThat(usage.inputTokens()).isNotNegative();
    assertThat(usage.outputTokens()).isNotNegative();
  }

  @Property(tries = 100)
  void onChunk_randomThreeWaySplit_sameUsage(
      @ForAll @IntRange(max = 10_000) int a, @ForAll @IntRange(max = 10_000) int b) {
    byte[] body = Fixtures.bytes("anthropic-stream.sse");
    int first = Math.min(a, b) % (body.length + 1);
    int second = Math.max(first, Math.max(a, b) % (body.length + 1));
    UsageExtractor extractor = UsageExtractor.forResponse("text/event-stream");

    extractor.onChunk(body, 0, first);
    extractor.onChunk(body, first, second - first);
    extractor.onChunk(body, second, body.length - second);
    extractor.onEnd();

    assertThat(extractor.usage()).isEqualTo(new Usage(472 + 2048, 15, true));
  }

  /**
   * A body that arrives whole (read by the blocking parser) reports exactly what the same bytes fed
   * to the non-blocking parser in two chunks report, for the JSON responses of every provider, with
   * one byte replaced and the body cut anywhere (malformed and truncated bodies included).
   */
  @Property(tries = 1000)
  void onLastChunk_wholeBody_sameUsageAsChunked(
      @ForAll @IntRange(max = 2) int fixture,
      @ForAll @IntRange(max = 100_000) int where,
      @ForAll byte replacement,
      @ForAll boolean damage,
      @ForAll @IntRange(max = 100_000) int cut,
      @ForAll @IntRange(max = 100_000) int split) {
    byte[] body =
        Fixtures.bytes(
            List.of(
                    "openai-chat-response.json",
                    "anthropic-response.json",
                    "openai-responses-response.json")
                .get(fixture));
    if (damage) {
      body[where % body.length] = replacement;
    }
    int length = cut % (body.length + 1);
    int first = split % (length + 1);

    UsageExtractor whole = UsageExtractor.forResponse("application/json");
    whole.onLastChunk(body, 0, length);
    UsageExtractor chunked = UsageExtractor.forResponse("application/json");
    chunked.onChunk(body, 0, first);
    chunked.onChunk(body, first, length - first);
    chunked.onEnd();

    assertThat(whole.usage()).isEqualTo(chunked.usage());
  }

  @Property(tries = 300)
  void onLastChunk_arbitraryBytes_sameUsageAsOnChunkThenOnEnd(
      @ForAll @Size(max = 300) byte[] body) {
    UsageExtractor whole = UsageExtractor.forResponse(null);
    whole.onLastChunk(body, 0, body.length);
    UsageExtractor fed = UsageExtractor.forResponse(null);
    fed.onChunk(body, 0, body.length);
    fed.onEnd();
    assertThat(whole.usage()).isEqualTo(fed.usage());
  }
}
