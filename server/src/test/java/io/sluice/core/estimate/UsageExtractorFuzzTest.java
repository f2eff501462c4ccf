package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.util.Arrays;

/**
 * Coverage-guided: the response usage extractor reads the same usage however the body is cut into
 * chunks. The input's first byte picks JSON or server-sent events and the chunking, the rest is the
 * response body. The body fed whole ({@code onLastChunk}, the blocking parser) and fed in chunks
 * (the non-blocking parser, or the SSE line reader; each chunk in a reused, dirtied buffer, ended
 * by {@code onLastChunk} or {@code onEnd}) give equal {@link Usage}; nothing throws; the counts are
 * never negative. Seeds: {@code UsageExtractorFuzzTestInputs/wholeEqualsChunked/}.
 */
class UsageExtractorFuzzTest {
  @FuzzTest(maxDuration = "2m")
  void wholeEqualsChunked(byte[] input) {
    if (input.length < 2) {
      return;
    }
    int selector = input[0] & 0xff;
    String contentType = (selector & 1) == 0 ? "application/json" : "text/event-stream";
    int chunk = 1 + (input[1] & 0xff) % 97; // 1..97 bytes per chunk
    boolean endWithLastChunk = (selector & 2) != 0;
    byte[] body = Arrays.copyOfRange(input, 2, input.length);

    UsageExtractor whole = UsageExtractor.forResponse(contentType);
    whole.onLastChunk(body, 0, body.length);
    Usage expected = whole.usage();
    assertThat(expected.inputTokens()).isNotNegative();
    assertThat(expected.outputTokens()).isNotNegative();

    UsageExtractor chunked = UsageExtractor.forResponse(contentType);
    byte[] buffer = new byte[chunk + 3]; // reused for every chunk, as Envoy's frames are
    for (int at = 0; at < body.length; at += chunk) {
      int n = Math.min(chunk, body.length - at);
      Arrays.fill(buffer, (byte) '}');
      System.arraycopy(body, at, buffer, 2, n);
      if (endWithLastChunk && at + n == body.length) {
        chunked.onLastChunk(buffer, 2, n);
      } else {
        chunked.onChunk(buffer, 2, n);
      }
    }
    chunked.onEnd();
    assertThat(chunked.usage()).as("chunks of %d bytes", chunk).isEqualTo(expected);
  }
}
