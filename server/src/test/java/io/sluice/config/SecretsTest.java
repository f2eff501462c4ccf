package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class SecretsTest {
  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "redis://user:pw1234@host:6379|redis://user:***@host:6379",
        "redis://:pw1234@host:6379|redis://:***@host:6379",
        "rediss://pw1234@host:6379/0|rediss://***@host:6379/0",
        "user:pw1234@host:6379|user:***@host:6379",
        "mymaster,user:pw1234@h1:26379,h2:26379|mymaster,user:***@h1:26379,h2:26379",
        "REDIS_URL: user:pw1234@host (expected: host:port)|REDIS_URL: user:***@host (expected: host:port)",
        "'{\"a\":\"u:pw1234@h\"}'|'{\"a\":\"u:***@h\"}'",
        "host:6379|host:6379",
        "ops@example.com|ops@example.com",
        "http://example.com/a@b|http://example.com/a@b",
      })
  void redactUrls_masksEveryUrlPassword(String in, String out) {
    assertThat(Secrets.redactUrls(in)).isEqualTo(out);
  }

  @ParameterizedTest
  @CsvSource({
    "REDIS_AUTH,true",
    "REDIS_SENTINEL_AUTH,true",
    "DB_PASSWORD,true",
    "client_secret,true",
    "HF_TOKEN,true",
    "OPENAI_API_KEY,true",
    "REDIS_URL,false",
    "CACHE_KEY_PREFIX,false",
    "BACKEND_TYPE,false"
  })
  void isSecretKey(String key, boolean secret) {
    assertThat(Secrets.isSecretKey(key)).isEqualTo(secret);
  }

  @Test
  void redactor_scrubsKnownValuesFromFreeText() {
    Secrets.Redactor r =
        Secrets.redactor(
            Map.of(
                "REDIS_AUTH", "admin:hunter22",
                "REDIS_URL", "redis://:urlpass1@h:1",
                "OTHER", "abc"));
    assertThat(r.scrub("WRONGPASS for admin:hunter22 / hunter22 / urlpass1 at h:1 abc"))
        .isEqualTo("WRONGPASS for *** / *** / *** at h:1 abc");
    assertThat(Secrets.redactAll(Map.of("REDIS_AUTH", "x", "REDIS_URL", "u:p@h")))
        .containsEntry("REDIS_AUTH", "***")
        .containsEntry("REDIS_URL", "u:***@h");
  }
}
