package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * {@link ModelEncodings#forModel} remembers the last name it looked up by identity: the same
 * instance, an equal copy, and names alternating with it answer as {@link ModelEncodings#lookup}
 * does, whatever was looked up before.
 */
class ModelEncodingLastTest {
  @Test
  void answersAsTheLookupWhateverCameBefore() {
    ModelEncodings e = new ModelEncodings();
    String[] names = {
      "gpt-4o", "claude-sonnet-4-5", "gpt-4", "openai/gpt-4o-mini", "", "gpt-3.5-turbo", "llama"
    };
    for (int round = 0; round < 3; round++) {
      for (String a : names) {
        for (String b : names) {
          String copy = new String(a.toCharArray());
          assertThat(e.forModel(a)).as(a).isSameAs(ModelEncodings.lookup(a));
          assertThat(e.forModel(a)).as(a).isSameAs(ModelEncodings.lookup(a));
          assertThat(e.forModel(copy)).as(copy).isSameAs(ModelEncodings.lookup(a));
          assertThat(e.forModel(b)).as(b).isSameAs(ModelEncodings.lookup(b));
          assertThat(e.forModel(a)).as(a).isSameAs(ModelEncodings.lookup(a));
        }
      }
    }
    assertThat(e.forModel(null)).isNull();
  }

  @Test
  void aNameReadFromBytesIsTheSameInstanceAndAnswersAtOnce() {
    ModelEncodings e = new ModelEncodings();
    byte[] body = "{\"model\":\"gpt-4o\"}".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    String first = e.name(body, 10, 16);
    assertThat(e.forModel(first)).isSameAs(ModelEncodings.o200k());
    String again = e.name(body, 10, 16);
    assertThat(again).isSameAs(first);
    assertThat(e.forModel(again)).isSameAs(ModelEncodings.o200k());
  }

  @Test
  void namesReadFromBytesAreTheirTextWhateverWasReadBefore() {
    ModelEncodings e = new ModelEncodings();
    String[] names = {
      "gpt-4o", "gpt-4a", "gpt-5o", "mod\u00e9l", "mod\u00e8l", "m", "", "x".repeat(129)
    };
    java.util.Random r = new java.util.Random(34);
    for (int i = 0; i < 5_000; i++) {
      String want = names[r.nextInt(names.length)];
      byte[] utf8 = want.getBytes(java.nio.charset.StandardCharsets.UTF_8);
      byte[] body = new byte[utf8.length + 6];
      int from = r.nextInt(3);
      System.arraycopy(utf8, 0, body, from, utf8.length);
      assertThat(e.name(body, from, from + utf8.length)).isEqualTo(want);
    }
  }
}
