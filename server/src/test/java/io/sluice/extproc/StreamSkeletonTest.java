package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.SluiceConfig;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Issue 34, the stream's own skeleton: what one ext_proc stream allocates for itself. Its answering
 * side is its superclass ({@link StreamOutput}), not an object beside it; its request keeps no copy
 * of the config's body limit (read from the stream's runtime where it is used), and the 413 answers
 * that limit gives are the same as before.
 */
class StreamSkeletonTest {
  private static final SluiceConfig.Limits TEN = new SluiceConfig.Limits(10);

  @Test
  void aStreamIsItsOwnOutput_noOutputObjectPerStream() {
    assertThat(StreamOutput.class).isAssignableFrom(ExtProcStream.class);
    assertThat(LiveStreams.Node.class).isAssignableFrom(StreamOutput.class); // still listed
    assertThat(fieldsOf(ExtProcStream.class, StreamOutput.class))
        .as("fields of ExtProcStream (and its superclasses) that hold a StreamOutput")
        .isEmpty();
  }

  @Test
  void aRequestKeepsNoCopyOfTheBodyLimit() {
    List<String> longs = new ArrayList<>();
    for (Field f : EnvoyRequest.class.getDeclaredFields()) {
      if (!Modifier.isStatic(f.getModifiers()) && f.getType() == long.class) {
        longs.add(f.getName());
      }
    }
    assertThat(longs).as("EnvoyRequest's long fields").containsExactly("streamedBytes");
  }

  @Test
  void overLimit_refusesOnlyPastTheLimit_withTheSameMessage() {
    assertThat(EnvoyRequest.overLimit(10, TEN, "request body")).isNull();
    assertThat(EnvoyRequest.overLimit(-1, TEN, "request body")).isNull(); // no content-length
    assertThat(EnvoyRequest.overLimit(11, TEN, "request body"))
        .isEqualTo("request body of 11 bytes exceeds the limit of 10");
  }

  @Test
  void streamedChunks_sumToTheLimit_thenRefused() {
    EnvoyRequest r = new EnvoyRequest(0);
    assertThat(r.streamedOverLimit(6, TEN)).isNull();
    assertThat(r.streamedOverLimit(4, TEN)).isNull();
    assertThat(r.wasStreamedRefused()).isFalse();
    assertThat(r.streamedOverLimit(1, TEN))
        .isEqualTo("streamed request body of 11 bytes exceeds the limit of 10");
    assertThat(r.wasStreamedRefused()).isTrue();
  }

  /** The instance fields of {@code c} and its superclasses whose type is {@code type} or a kind. */
  static List<String> fieldsOf(Class<?> c, Class<?> type) {
    List<String> out = new ArrayList<>();
    for (Class<?> k = c; k != null && k != Object.class; k = k.getSuperclass()) {
      for (Field f : k.getDeclaredFields()) {
        if (!Modifier.isStatic(f.getModifiers()) && type.isAssignableFrom(f.getType())) {
          out.add(k.getSimpleName() + "." + f.getName());
        }
      }
    }
    return out;
  }
}
