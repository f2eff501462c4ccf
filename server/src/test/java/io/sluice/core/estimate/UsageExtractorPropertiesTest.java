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
}
