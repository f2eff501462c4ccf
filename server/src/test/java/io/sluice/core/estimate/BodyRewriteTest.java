package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class BodyRewriteTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static JsonNode apply(RequestFormat f, String body, BodyRewrite.Edits edits)
      throws Exception {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    byte[] out = BodyRewrite.apply(f, b, 0, b.length, edits);
    assertThat(out).isNotNull();
    return JSON.readTree(out);
  }

  private static BodyRewrite.Edits cap(long cap, String instruction) {
    return BodyRewrite.Edits.NONE.withCap(cap, null, instruction);
  }

  @Test
  void chat_clampsEveryCapPresent_onlyDownwards_andLeavesTheRestAsWritten() throws Exception {
    String body =
        "{\"model\":\"m\",\"max_tokens\":400,\"max_completion_tokens\":30,\"temperature\":0.70,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"n\":2}";
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    String out =
        new String(
            BodyRewrite.apply(RequestFormat.OPENAI_CHAT, b, 0, b.length, cap(50, null)),
            StandardCharsets.UTF_8);
    assertThat(out)
        .isEqualTo(
            "{\"model\":\"m\",\"max_tokens\":50,\"max_completion_tokens\":30,\"temperature\":0.70,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"n\":2}");
  }

  @Test
  void chat_withoutCap_addsMaxTokens_orTheConfiguredField() throws Exception {
    String body = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    assertThat(apply(RequestFormat.OPENAI_CHAT, body, cap(50, null)).path("max_tokens").asLong())
        .isEqualTo(50);
    JsonNode o =
        apply(
            RequestFormat.OPENAI_CHAT,
            body,
            BodyRewrite.Edits.NONE.withCap(50, "max_completion_tokens", null));
    assertThat(o.path("max_completion_tokens").asLong()).isEqualTo(50);
    assertThat(o.has("max_tokens")).isFalse();
  }

  @Test
  void chat_instruction_joinsALeadingSystemMessage_elseLeadsANewOne() throws Exception {
    JsonNode joined =
        apply(
            RequestFormat.OPENAI_CHAT,
            "{\"messages\":[{\"role\":\"developer\",\"content\":\"Be kind.\"},"
                + "{\"role\":\"user\",\"content\":\"hi\"}]}",
            cap(50, "Be brief."));
    assertThat(joined.path("messages")).hasSize(2);
    assertThat(joined.path("messages").get(0).path("content").asText())
        .isEqualTo("Be kind.\n\nBe brief.");
    JsonNode added =
        apply(
            RequestFormat.OPENAI_CHAT,
            "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
            cap(50, "Be brief."));
    assertThat(added.path("messages")).hasSize(2);
    assertThat(added.path("messages").get(0).path("role").asText()).isEqualTo("system");
    assertThat(added.path("messages").get(0).path("content").asText()).isEqualTo("Be brief.");
  }

  @Test
  void anthropic_systemTextOrBlocks_responsesInstructions() throws Exception {
    JsonNode text =
        apply(
            RequestFormat.ANTHROPIC_MESSAGES,
            "{\"max_tokens\":900,\"system\":\"Be kind.\",\"messages\":[]}",
            cap(64, "Be brief."));
    assertThat(text.path("max_tokens").asLong()).isEqualTo(64);
    assertThat(text.path("system").asText()).isEqualTo("Be kind.\n\nBe brief.");
    JsonNode blocks =
        apply(
            RequestFormat.AUTO,
            "{\"model\":\"claude-x\",\"max_tokens\":900,\"system\":[{\"type\":\"text\",\"text\":\"a\"}],"
                + "\"messages\":[]}",
            cap(64, "Be brief."));
    assertThat(blocks.path("system")).hasSize(2);
    assertThat(blocks.path("system").get(1).path("text").asText()).isEqualTo("Be brief.");
    JsonNode responses = apply(RequestFormat.AUTO, "{\"input\":\"hi\"}", cap(64, "Be brief."));
    assertThat(responses.path("max_output_tokens").asLong()).isEqualTo(64);
    assertThat(responses.path("instructions").asText()).isEqualTo("Be brief.");
  }

  @Test
  void modelAndPriority_areTopLevelMembers_priorityANumber() throws Exception {
    JsonNode o =
        apply(
            RequestFormat.OPENAI_CHAT,
            "{\"model\":\"big\",\"messages\":[]}",
            BodyRewrite.Edits.NONE.withModel("small").withPriority("priority", "0.667"));
    assertThat(o.path("model").asText()).isEqualTo("small");
    assertThat(o.path("priority").isNumber()).isTrue();
    assertThat(o.path("priority").decimalValue()).isEqualByComparingTo("0.667");
  }

  @Test
  void notAJsonObject_orEmbeddings_orACapNowhereToGo_isNull() {
    for (String body : new String[] {"[1,2]", "{\"a\":", "not json", ""}) {
      byte[] b = body.getBytes(StandardCharsets.UTF_8);
      assertThat(BodyRewrite.apply(RequestFormat.OPENAI_CHAT, b, 0, b.length, cap(5, null)))
          .as(body)
          .isNull();
    }
    byte[] emb = "{\"input\":\"x\",\"encoding_format\":\"float\"}".getBytes(StandardCharsets.UTF_8);
    assertThat(BodyRewrite.apply(RequestFormat.AUTO, emb, 0, emb.length, cap(5, null))).isNull();
    byte[] odd = "{\"foo\":1}".getBytes(StandardCharsets.UTF_8);
    assertThat(BodyRewrite.apply(RequestFormat.AUTO, odd, 0, odd.length, cap(5, null))).isNull();
  }

  @Test
  void readsTheSliceItIsGiven() throws Exception {
    byte[] b = "xx{\"max_tokens\":99,\"prompt\":\"p\"}yy".getBytes(StandardCharsets.UTF_8);
    byte[] out = BodyRewrite.apply(RequestFormat.AUTO, b, 2, b.length - 4, cap(7, null));
    assertThat(JSON.readTree(out).path("max_tokens").asLong()).isEqualTo(7);
  }
}
