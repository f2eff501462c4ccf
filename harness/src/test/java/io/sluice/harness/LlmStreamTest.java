package io.sluice.harness;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class LlmStreamTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void messages_areTheFourOfAnLlmRequestInEnvoysOrder() {
    List<ProcessingRequest> m = LlmStream.messages();

    assertThat(m)
        .extracting(ProcessingRequest::getRequestCase)
        .containsExactly(
            ProcessingRequest.RequestCase.REQUEST_HEADERS,
            ProcessingRequest.RequestCase.REQUEST_BODY,
            ProcessingRequest.RequestCase.RESPONSE_HEADERS,
            ProcessingRequest.RequestCase.RESPONSE_BODY);
    assertThat(m.get(0).getRequestHeaders().getEndOfStream()).isFalse();
    assertThat(m.get(0).getRequestHeaders().getHeaders().getHeadersCount()).isEqualTo(11);
    assertThat(m.get(0).getProtocolConfig().getRequestBodyMode()).isEqualTo(BodySendMode.BUFFERED);
    assertThat(m.get(1).getRequestBody().getEndOfStream()).isTrue();
    assertThat(m.get(3).getResponseBody().getEndOfStream()).isTrue();
    assertThat(LlmStream.messageBytes().length).isEqualTo(4);
  }

  @Test
  void bodies_areAChatRequestOfAbout19KbAndAnAnswerOfAbout05KbWithUsage() throws Exception {
    byte[] chat = LlmStream.CHAT_BODY.getBytes(StandardCharsets.UTF_8);
    byte[] answer = LlmStream.ANSWER_BODY.getBytes(StandardCharsets.UTF_8);

    assertThat(chat.length).isBetween(1800, 2000);
    assertThat(answer.length).isBetween(450, 550);
    JsonNode request = JSON.readTree(chat);
    assertThat(request.get("model").asText()).isEqualTo("claude-sonnet-4-5");
    assertThat(request.get("messages")).hasSize(4);
    assertThat(JSON.readTree(answer).get("usage").get("completion_tokens").asInt()).isEqualTo(71);
  }

  @Test
  void oneShotHeaders_endTheStream() {
    assertThat(LlmStream.oneShotHeaders().getRequestHeaders().getEndOfStream()).isTrue();
    assertThat(LlmStream.oneShotHeaders().hasProtocolConfig()).isFalse();
  }
}
