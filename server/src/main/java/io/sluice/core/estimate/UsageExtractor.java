package io.sluice.core.estimate;

/** STUB. */
public final class UsageExtractor {
  public static UsageExtractor forResponse(String contentType) {
    return new UsageExtractor();
  }

  public void onChunk(byte[] data, int offset, int length) {}

  public void onEnd() {}

  public Usage usage() {
    return Usage.NONE;
  }
}
