package io.sluice.core.intake;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The dispatch marker: valid for its job's tenant until it expires; forged or malformed refused.
 */
class DispatchMarkerTest {
  private static final long NOW = 1_800_000_000_000L;
  private static final String ID = "resp_0123456789abcdef0123456789abcdef";
  private final DispatchMarker marker = marker("a-secret-of-at-least-16-bytes");

  private static DispatchMarker marker(String secret) {
    return new DispatchMarker(secret.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void signed_isValid_forItsTenant_untilItExpires() {
    String m = marker.sign(ID, "acme", NOW + 60_000);
    assertThat(m).startsWith(ID + "." + (NOW + 60_000) + ".");
    assertThat(marker.invalid(m, "acme", NOW)).isNull();
    assertThat(marker.invalid(m, "acme", NOW + 59_999)).isNull();
    assertThat(marker.invalid(m, "acme", NOW + 60_000)).isEqualTo("expired");
  }

  @Test
  void forged_anotherSecret_anotherTenant_aChangedIdOrExpiry_areRefused() {
    String m = marker.sign(ID, "acme", NOW + 60_000);
    assertThat(marker("another-secret-16-bytes!").invalid(m, "acme", NOW)).isEqualTo("forged");
    assertThat(marker.invalid(m, "globex", NOW)).isEqualTo("forged");
    String otherId = "resp_ffffffffffffffffffffffffffffffff" + m.substring(ID.length());
    assertThat(marker.invalid(otherId, "acme", NOW)).isEqualTo("forged");
    String later = m.replace("." + (NOW + 60_000) + ".", "." + (NOW + 3_600_000) + ".");
    assertThat(marker.invalid(later, "acme", NOW)).isEqualTo("forged");
    char last = m.charAt(m.length() - 1);
    String flipped = m.substring(0, m.length() - 1) + (last == '0' ? '1' : '0');
    assertThat(marker.invalid(flipped, "acme", NOW)).isEqualTo("forged");
  }

  @Test
  void malformed_isRefused_withoutAMacComputed() {
    assertThat(marker.invalid("", "acme", NOW)).isEqualTo("malformed");
    assertThat(marker.invalid("yes", "acme", NOW)).isEqualTo("malformed");
    assertThat(marker.invalid(ID + ".soon." + "0".repeat(64), "acme", NOW)).isEqualTo("malformed");
    assertThat(marker.invalid(ID + "." + NOW + ".zz" + "0".repeat(62), "acme", NOW))
        .isEqualTo("malformed");
    assertThat(marker.invalid(ID + "." + NOW + ".00", "acme", NOW)).isEqualTo("malformed");
    assertThat(marker.invalid("x".repeat(300), "acme", NOW)).isEqualTo("malformed");
  }

  @Test
  void aShortSecret_isRejected_andNeverShown() {
    assertThatThrownBy(() -> marker("short")).isInstanceOf(IllegalArgumentException.class);
    assertThat(marker.toString()).doesNotContain("secret-of");
  }
}
