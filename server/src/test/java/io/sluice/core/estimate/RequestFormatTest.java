package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

class RequestFormatTest {

  @ParameterizedTest
  @EnumSource(RequestFormat.class)
  void fromConfigName_configName_roundTrips(RequestFormat format) {
    assertThat(RequestFormat.fromConfigName(format.configName())).isEqualTo(format);
    assertThat(RequestFormat.fromConfigName(" " + format.configName().toUpperCase() + " "))
        .isEqualTo(format);
  }

  @Test
  void fromConfigName_unknown_throwsWithExpectedValues() {
    assertThatThrownBy(() -> RequestFormat.fromConfigName("openai"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "format: openai (expected: one of openai-chat, openai-completions, openai-responses,"
                + " openai-embeddings, anthropic-messages, auto)");
    assertThatThrownBy(() -> RequestFormat.fromConfigName(null))
        .hasMessageStartingWith("format: null (expected: one of ");
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      nullValues = "NULL",
      value = {
        "/v1/chat/completions                                    | OPENAI_CHAT",
        "/v1/chat/completions?stream=true                        | OPENAI_CHAT",
        "/openai/deployments/gpt4o/chat/completions?api-version=1 | OPENAI_CHAT",
        "/v1/chat/completions/                                   | OPENAI_CHAT",
        "/v1/completions                                         | OPENAI_COMPLETIONS",
        "/v1/responses                                           | OPENAI_RESPONSES",
        "/v1/embeddings                                          | OPENAI_EMBEDDINGS",
        "/v1/messages                                            | ANTHROPIC_MESSAGES",
        "/anthropic/v1/messages?beta=true                        | ANTHROPIC_MESSAGES",
        "/v1/threads/thread_1/messages                           | AUTO",
        "/v1/messages/count_tokens                               | AUTO",
        "/v1/models                                              | AUTO",
        "/                                                       | AUTO",
        "''                                                      | AUTO",
        "NULL                                                    | AUTO",
      })
  void fromPath_path_resolvesBySuffix(String path, RequestFormat expected) {
    assertThat(RequestFormat.fromPath(path)).isEqualTo(expected);
  }
}
