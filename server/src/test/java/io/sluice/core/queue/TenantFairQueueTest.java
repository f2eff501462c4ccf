package io.sluice.core.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class TenantFairQueueTest {
  private static final long SEC = 1_000_000_000L;

  private final FakeTicker ticker = new FakeTicker();
  private long nextId = 1;

  private QueuedItem<String> item(String tenant, double weight, long work, long deadlineSeconds) {
    long now = ticker.nanos();
    return new QueuedItem<>(
        nextId++,
        tenant,
        weight,
        work,
        now,
        now + 30 * SEC,
        now + deadlineSeconds * SEC,
        tenant + "#" + (nextId - 1));
  }

  private static TenantFairQueue<String> queue(long maxWork, int maxItems, double tenantShare) {
    return new TenantFairQueue<>(new QueueBounds(maxWork, maxItems, 10 * SEC, tenantShare));
  }

  private static List<String> drain(TenantFairQueue<String> q, long now) {
    List<String> out = new ArrayList<>();
    for (Poll<String> p = q.poll(now); p.hasItem(); p = q.poll(now)) {
      out.add(p.item().payload());
    }
    return out;
  }

  @Test
  void poll_sameTenant_servesEarliestDeadlineFirst() {
    TenantFairQueue<String> q = queue(1000, 100, 1.0);
    QueuedItem<String> late = item("a", 1, 10, 50);
    QueuedItem<String> early = item("a", 1, 10, 20);
    QueuedItem<String> middle = item("a", 1, 10, 30);
    QueuedItem<String> middleTwin = item("a", 1, 10, 30);
    for (QueuedItem<String> i : List.of(late, early, middle, middleTwin)) {
      q.offer(i, ticker.nanos());
    }

    assertThat(drain(q, ticker.nanos()))
        .containsExactly(early.payload(), middle.payload(), middleTwin.payload(), late.payload());
  }

  @Test
  void poll_twoTenantsWeightTwoToOne_servesWorkTwoToOne() {
    TenantFairQueue<String> q = queue(10_000, 1000, 1.0);
    for (int i = 0; i < 30; i++) {
      q.offer(item("heavy", 2, 10, 60), ticker.nanos());
      q.offer(item("light", 1, 10, 60), ticker.nanos());
    }
    long heavy = 0;
    long light = 0;
    for (int i = 0; i < 30; i++) {
      QueuedItem<String> served = q.poll(ticker.nanos()).item();
      if (served.tenant().equals("heavy")) {
        heavy += served.workUnits();
      } else {
        light += served.workUnits();
      }
    }
    assertThat(heavy).isEqualTo(200);
    assertThat(light).isEqualTo(100);
  }

  @Test
  void poll_newTenantArrivesLate_getsNoCreditForIdleTime() {
    TenantFairQueue<String> q = queue(10_000, 1000, 1.0);
    for (int i = 0; i < 20; i++) {
      q.offer(item("old", 1, 10, 60), ticker.nanos());
    }
    for (int i = 0; i < 10; i++) {
      q.poll(ticker.nanos());
    }
    for (int i = 0; i < 10; i++) {
      q.offer(item("new", 1, 10, 60), ticker.nanos());
    }
    List<String> next = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      next.add(q.poll(ticker.nanos()).item().tenant());
    }
    // alternates instead of serving "new" ten times in a row
    assertThat(next).containsExactlyInAnyOrder("old", "old", "old", "new", "new", "new");
  }

  @Test
  void offer_tenantEmptiesAndRefills_keepsItsFinishTag() {
    TenantFairQueue<String> q = queue(10_000, 1000, 1.0);
    q.offer(item("a", 1, 100, 60), ticker.nanos());
    for (int i = 0; i < 5; i++) {
      q.offer(item("b", 1, 10, 60), ticker.nanos());
    }
    assertThat(q.poll(ticker.nanos()).item().tenant()).isEqualTo("a"); // a: S=0, F=100
    q.offer(item("a", 1, 100, 60), ticker.nanos()); // S = max(V, 100) = 100
    List<String> next = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      next.add(q.poll(ticker.nanos()).item().tenant());
    }
    assertThat(next).containsExactly("b", "b", "b", "b", "b", "a");
  }

  @Test
  void offer_itemsBoundReached_rejectsQueueFull() {
    TenantFairQueue<String> q = queue(1000, 2, 1.0);
    assertThat(q.offer(item("a", 1, 1, 60), ticker.nanos())).isInstanceOf(Offer.Accepted.class);
    assertThat(q.offer(item("b", 1, 1, 60), ticker.nanos())).isInstanceOf(Offer.Accepted.class);

    assertThat(q.offer(item("c", 1, 1, 60), ticker.nanos()))
        .isEqualTo(new Offer.Rejected(Offer.Reason.QUEUE_FULL));
    assertThat(q.depth()).isEqualTo(2);
  }

  @Test
  void offer_workBoundReached_rejectsQueueFull() {
    TenantFairQueue<String> q = queue(100, 100, 1.0);
    q.offer(item("a", 1, 60, 60), ticker.nanos());
    q.offer(item("b", 1, 40, 60), ticker.nanos());

    assertThat(q.offer(item("c", 1, 1, 60), ticker.nanos()))
        .isEqualTo(new Offer.Rejected(Offer.Reason.QUEUE_FULL));
    assertThat(q.queuedWork()).isEqualTo(100);
  }

  @Test
  void offer_tenantOverItsShare_rejectsTenantShareButOthersStillFit() {
    TenantFairQueue<String> q = queue(100, 100, 0.25);
    q.offer(item("greedy", 1, 20, 60), ticker.nanos());
    q.offer(item("greedy", 1, 5, 60), ticker.nanos());

    assertThat(q.offer(item("greedy", 1, 1, 60), ticker.nanos()))
        .isEqualTo(new Offer.Rejected(Offer.Reason.TENANT_SHARE));
    assertThat(q.offer(item("polite", 1, 25, 60), ticker.nanos()))
        .isInstanceOf(Offer.Accepted.class);
    assertThat(q.tenantQueuedWork("greedy")).isEqualTo(25);
  }

  @Test
  void offer_queueFullAndTenantOverShare_reportsQueueFull() {
    TenantFairQueue<String> q = queue(100, 100, 0.5);
    q.offer(item("a", 1, 50, 60), ticker.nanos());
    q.offer(item("b", 1, 50, 60), ticker.nanos());

    // the room is full: nobody could queue, whatever their share
    assertThat(q.offer(item("a", 1, 1, 60), ticker.nanos()))
        .isEqualTo(new Offer.Rejected(Offer.Reason.QUEUE_FULL));
    assertThat(q.offer(item("c", 1, 1, 60), ticker.nanos()))
        .isEqualTo(new Offer.Rejected(Offer.Reason.QUEUE_FULL));
  }

  @Test
  void offer_queueFilledByOneTenant_reportsQueueFull() {
    TenantFairQueue<String> q = queue(100, 100, 1.0); // one tenant may own the whole room
    q.offer(item("solo", 1, 60, 60), ticker.nanos());
    q.offer(item("solo", 1, 40, 60), ticker.nanos());

    assertThat(q.offer(item("solo", 1, 1, 60), ticker.nanos()))
        .isEqualTo(new Offer.Rejected(Offer.Reason.QUEUE_FULL));
  }

  @Test
  void offer_queueFullByItemsWhileTheTenantIsOverItsShare_reportsQueueFull() {
    TenantFairQueue<String> q = queue(100, 2, 0.5);
    q.offer(item("solo", 1, 30, 60), ticker.nanos());
    q.offer(item("solo", 1, 20, 60), ticker.nanos());

    assertThat(q.offer(item("solo", 1, 10, 60), ticker.nanos()))
        .isEqualTo(new Offer.Rejected(Offer.Reason.QUEUE_FULL));
  }

  @Test
  void offer_expiryNotAfterNow_rejectsExpired() {
    TenantFairQueue<String> q = queue(100, 100, 1.0);
    long now = ticker.nanos();
    QueuedItem<String> dead = new QueuedItem<>(1, "a", 1, 1, now - SEC, now, now + SEC, "x");

    assertThat(q.offer(dead, now)).isEqualTo(new Offer.Rejected(Offer.Reason.EXPIRED));
    assertThat(q.depth()).isZero();
  }

  @Test
  void offer_duplicateId_throws() {
    TenantFairQueue<String> q = queue(100, 100, 1.0);
    QueuedItem<String> i = item("a", 1, 1, 60);
    q.offer(i, ticker.nanos());

    assertThatThrownBy(() -> q.offer(i, ticker.nanos()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("id: " + i.id());
  }

  @Test
  void poll_oneTickBeforeExpiry_servesItem_atExpiry_reportsExpired() {
    TenantFairQueue<String> q = queue(100, 100, 1.0);
    long now = ticker.nanos();
    QueuedItem<String> a = new QueuedItem<>(1, "a", 1, 1, now, now + 5 * SEC, now + 9 * SEC, "a");
    QueuedItem<String> b = new QueuedItem<>(2, "b", 1, 1, now, now + 5 * SEC, now + 9 * SEC, "b");
    q.offer(a, now);
    q.offer(b, now);

    ticker.advanceNanos(5 * SEC - 1);
    assertThat(q.poll(ticker.nanos()).item()).isEqualTo(a);
    ticker.advanceNanos(1);
    Poll<String> p = q.poll(ticker.nanos());

    assertThat(p.item()).isNull();
    assertThat(p.expired()).containsExactly(b);
    assertThat(q.nextExpiryNanos()).isEmpty();
  }

  @Test
  void expire_itemLongerThanMaxWait_expiresAtMaxWait() {
    TenantFairQueue<String> q = queue(100, 100, 1.0); // maxWait 10 s
    long now = ticker.nanos();
    QueuedItem<String> i = new QueuedItem<>(1, "a", 1, 1, now, now + 60 * SEC, now + 90 * SEC, "");
    q.offer(i, now);

    assertThat(q.nextExpiryNanos()).hasValue(now + 10 * SEC);
    assertThat(q.expire(now + 10 * SEC - 1)).isEmpty();
    assertThat(q.expire(now + 10 * SEC)).containsExactly(i);
    assertThat(q.expire(now + 11 * SEC)).isEmpty();
  }

  @Test
  void poll_expiredItemAtHeadOfFairOrder_isSkippedAndNextServed() {
    TenantFairQueue<String> q = queue(100, 100, 1.0);
    long now = ticker.nanos();
    QueuedItem<String> shortLived =
        new QueuedItem<>(1, "a", 1, 1, now, now + SEC, now + 2 * SEC, "short");
    QueuedItem<String> longLived =
        new QueuedItem<>(2, "b", 1, 1, now, now + 9 * SEC, now + 9 * SEC, "long");
    q.offer(shortLived, now);
    q.offer(longLived, now);
    assertThat(q.peek()).contains(shortLived);

    Poll<String> p = q.poll(now + 2 * SEC);

    assertThat(p.item()).isEqualTo(longLived);
    assertThat(p.expired()).containsExactly(shortLived);
    assertThat(q.isEmpty()).isTrue();
  }

  @Test
  void remove_cancelledItem_isGoneAndFreesItsRoom() {
    TenantFairQueue<String> q = queue(10, 100, 1.0);
    QueuedItem<String> a = item("a", 1, 10, 60);
    q.offer(a, ticker.nanos());

    assertThat(q.remove(a.id())).contains(a);
    assertThat(q.remove(a.id())).isEmpty();
    assertThat(q.depth()).isZero();
    assertThat(q.flowCount()).isZero();
    assertThat(q.offer(item("b", 1, 10, 60), ticker.nanos())).isInstanceOf(Offer.Accepted.class);
  }

  @Test
  void offer_accepted_reportsFairPositionAndWorkAhead() {
    TenantFairQueue<String> q = queue(10_000, 100, 1.0);
    for (int i = 0; i < 4; i++) {
      q.offer(item("busy", 1, 100, 60), ticker.nanos());
    }
    // a new tenant of equal weight starts at V: only busy's head is ahead of it
    Offer first = q.offer(item("new", 1, 50, 60), ticker.nanos());
    assertThat(first).isEqualTo(new Offer.Accepted(1, 100));
    // busy's own next item waits behind all of busy's work and new's share
    assertThat(q.queuedWorkAhead("busy", 1)).isEqualTo(450);
  }

  @Test
  void topTenants_byQueuedWork_largestFirst() {
    TenantFairQueue<String> q = queue(10_000, 100, 1.0);
    q.offer(item("a", 1, 10, 60), ticker.nanos());
    q.offer(item("b", 1, 30, 60), ticker.nanos());
    q.offer(item("b", 1, 30, 60), ticker.nanos());
    q.offer(item("c", 1, 20, 60), ticker.nanos());

    assertThat(q.topTenants(2))
        .containsExactly(
            new TenantFairQueue.TenantLoad("b", 60, 2), new TenantFairQueue.TenantLoad("c", 20, 1));
  }

  @Test
  void oldestAgeNanos_neverRefreshed() {
    TenantFairQueue<String> q = queue(10_000, 100, 1.0);
    q.offer(item("a", 1, 10, 60), ticker.nanos());
    ticker.advance(Duration.ofSeconds(2));
    q.offer(item("b", 1, 10, 60), ticker.nanos());
    ticker.advance(Duration.ofSeconds(1));

    assertThat(q.oldestAgeNanos(ticker.nanos())).isEqualTo(3 * SEC);
    q.poll(ticker.nanos());
    assertThat(q.oldestAgeNanos(ticker.nanos())).isEqualTo(SEC);
  }

  @Test
  void clear_returnsEverythingAndForgetsTenants() {
    TenantFairQueue<String> q = queue(10_000, 100, 1.0);
    q.offer(item("a", 1, 10, 60), ticker.nanos());
    q.offer(item("b", 1, 10, 60), ticker.nanos());

    assertThat(q.clear()).hasSize(2);
    assertThat(q.depth()).isZero();
    assertThat(q.queuedWork()).isZero();
    assertThat(q.flowCount()).isZero();
  }

  @Test
  void virtualTime_largeBacklogServedLong_staysBounded() {
    TenantFairQueue<String> q = queue(Long.MAX_VALUE / 2, 100, 1.0);
    long now = ticker.nanos();
    long hugeWork = 1_000_000_000_000L;
    q.offer(new QueuedItem<>(1, "a", 0.5, hugeWork, now, now + SEC, now + SEC, "a1"), now);
    q.offer(new QueuedItem<>(2, "a", 0.5, hugeWork, now, now + SEC, now + SEC, "a2"), now);
    q.offer(new QueuedItem<>(3, "a", 0.5, hugeWork, now, now + SEC, now + SEC, "a3"), now);
    q.offer(new QueuedItem<>(4, "b", 0.5, 1, now, now + SEC, now + SEC, "b"), now);

    q.poll(now);
    q.poll(now);
    q.poll(now);

    assertThat(q.virtualTime()).isLessThan(1e12);
    assertThat(q.depth()).isEqualTo(1);
  }
}
