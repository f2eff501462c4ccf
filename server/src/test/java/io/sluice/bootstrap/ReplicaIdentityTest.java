package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** Issue 31: which lease ids a replica takes, and whose leases it drops at start. */
class ReplicaIdentityTest {

  @Test
  void podName_incarnationSuffix_dropsEarlierIncarnationsOfTheSamePod() {
    ReplicaShares.Identity a = ReplicaShares.identity(Map.of("POD_NAME", "sluice-7d9f-x2k4p"));
    ReplicaShares.Identity b = ReplicaShares.identity(Map.of("POD_NAME", "sluice-7d9f-x2k4p"));
    assertThat(a.id()).startsWith("sluice-7d9f-x2k4p#").isNotEqualTo(b.id());
    assertThat(a.supersedes()).isEqualTo("sluice-7d9f-x2k4p#");
    assertThat(b.id()).startsWith(a.supersedes());
  }

  @Test
  void hostNameOnly_dropsNothing_twoProcessesOnOneHostShareIt() {
    ReplicaShares.Identity h = ReplicaShares.identity(Map.of("HOSTNAME", "laptop"));
    assertThat(h.id()).startsWith("laptop-");
    assertThat(h.supersedes()).isEmpty();
    assertThat(ReplicaShares.identity(Map.of()).id()).startsWith("sluice-");
  }

  @Test
  void explicitReplicaId_keptAsIs_itsFirstExchangeRewritesItsOwnLease() {
    ReplicaShares.Identity r =
        ReplicaShares.identity(Map.of("SLUICE_REPLICA_ID", " r1 ", "POD_NAME", "p"));
    assertThat(r.id()).isEqualTo("r1");
    assertThat(r.supersedes()).isEmpty();
  }
}
