package io.sluice.proxyless;

import com.google.protobuf.Any;
import com.google.protobuf.Message;
import com.google.protobuf.UInt32Value;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
// grpc-xds carries its own (shaded) copy of the Envoy API, newer than io.envoyproxy.controlplane's
// (GoogleGrpc.channel_credentials_plugin, BodySendMode.GRPC): the control plane speaks it.
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.core.v3.Address;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.core.v3.AggregatedConfigSource;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.core.v3.ConfigSource;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.core.v3.HealthStatus;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.core.v3.Locality;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.core.v3.SocketAddress;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.endpoint.v3.Endpoint;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.endpoint.v3.LbEndpoint;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.endpoint.v3.LocalityLbEndpoints;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.listener.v3.ApiListener;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.listener.v3.Listener;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.route.v3.Route;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.route.v3.RouteAction;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.route.v3.RouteMatch;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.route.v3.VirtualHost;
import io.grpc.xds.shaded.io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor;
import io.grpc.xds.shaded.io.envoyproxy.envoy.extensions.filters.http.router.v3.Router;
import io.grpc.xds.shaded.io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager;
import io.grpc.xds.shaded.io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter;
import io.grpc.xds.shaded.io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.grpc.xds.shaded.io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.xds.shaded.io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A minimal in-process xDS control plane (state-of-the-world ADS) for one proxyless client: the
 * listener {@code target} (an API listener whose HttpConnectionManager runs the ext_proc filter,
 * then the router, with an inline route to cluster {@code backend}), the cluster (EDS over ADS) and
 * its one endpoint. Every request for a type is answered with the full set; ACKs (the version the
 * client already has) are not answered again. NACKs are recorded for the test to assert on.
 */
final class XdsControlPlane implements AutoCloseable {
  static final String LDS = "type.googleapis.com/envoy.config.listener.v3.Listener";
  static final String RDS = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
  static final String CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
  static final String EDS = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
  static final String CLUSTER = "backend";

  private final Server server;
  private final Map<String, List<Any>> resources = new HashMap<>();
  private final List<String> nacks = new CopyOnWriteArrayList<>();
  private final AtomicInteger nonce = new AtomicInteger();

  XdsControlPlane(String target, ExternalProcessor extProc, int backendPort) {
    HttpConnectionManager hcm =
        HttpConnectionManager.newBuilder()
            .setRouteConfig(
                RouteConfiguration.newBuilder()
                    .setName("route-" + target)
                    .addVirtualHosts(
                        VirtualHost.newBuilder()
                            .setName("llm")
                            .addDomains("*")
                            .addRoutes(
                                Route.newBuilder()
                                    .setMatch(RouteMatch.newBuilder().setPrefix("/"))
                                    .setRoute(RouteAction.newBuilder().setCluster(CLUSTER)))))
            .addHttpFilters(
                HttpFilter.newBuilder()
                    .setName("sluice-ext-proc")
                    .setTypedConfig(Any.pack(extProc)))
            .addHttpFilters(
                HttpFilter.newBuilder()
                    .setName("router")
                    .setTypedConfig(Any.pack(Router.getDefaultInstance())))
            .build();
    Listener listener =
        Listener.newBuilder()
            .setName(target)
            .setApiListener(ApiListener.newBuilder().setApiListener(Any.pack(hcm)))
            .build();
    Cluster cluster =
        Cluster.newBuilder()
            .setName(CLUSTER)
            .setType(Cluster.DiscoveryType.EDS)
            .setEdsClusterConfig(
                Cluster.EdsClusterConfig.newBuilder()
                    .setEdsConfig(
                        ConfigSource.newBuilder()
                            .setAds(AggregatedConfigSource.getDefaultInstance())))
            .setLbPolicy(Cluster.LbPolicy.ROUND_ROBIN)
            .build();
    ClusterLoadAssignment endpoints =
        ClusterLoadAssignment.newBuilder()
            .setClusterName(CLUSTER)
            .addEndpoints(
                LocalityLbEndpoints.newBuilder()
                    .setLocality(Locality.newBuilder().setRegion("local").setZone("a"))
                    .setLoadBalancingWeight(UInt32Value.of(1))
                    .addLbEndpoints(
                        LbEndpoint.newBuilder()
                            .setHealthStatus(HealthStatus.HEALTHY)
                            .setEndpoint(
                                Endpoint.newBuilder()
                                    .setAddress(
                                        Address.newBuilder()
                                            .setSocketAddress(
                                                SocketAddress.newBuilder()
                                                    .setAddress("127.0.0.1")
                                                    .setPortValue(backendPort))))))
            .build();
    resources.put(LDS, List.of(pack(listener)));
    resources.put(RDS, List.of());
    resources.put(CDS, List.of(pack(cluster)));
    resources.put(EDS, List.of(pack(endpoints)));
    try {
      server =
          NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
              .addService(new Ads())
              .build()
              .start();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Any pack(Message m) {
    return Any.pack(m);
  }

  int port() {
    return server.getPort();
  }

  /** The error details of every NACK the client sent (a config it refused). */
  List<String> nacks() {
    return List.copyOf(nacks);
  }

  /** The bootstrap of a client of this control plane (JSON as a map, gRFC A27). */
  Map<String, Object> bootstrap() {
    return Map.of(
        "xds_servers",
        List.of(
            Map.of(
                "server_uri",
                "127.0.0.1:" + port(),
                "channel_creds",
                List.of(Map.of("type", "insecure")),
                // trusted: the ext_proc GrpcService's target and credentials come from xDS
                // (gRFC A102); untrusted servers need allowed_grpc_services in the bootstrap
                "server_features",
                List.of("xds_v3", "trusted_xds_server"))),
        "node",
        Map.of("id", "sluice-proxyless-test", "locality", Map.of("zone", "a")));
  }

  private final class Ads
      extends AggregatedDiscoveryServiceGrpc.AggregatedDiscoveryServiceImplBase {
    @Override
    public StreamObserver<DiscoveryRequest> streamAggregatedResources(
        StreamObserver<DiscoveryResponse> out) {
      return new StreamObserver<>() {
        @Override
        public void onNext(DiscoveryRequest req) {
          if (req.hasErrorDetail()) {
            nacks.add(req.getTypeUrl() + ": " + req.getErrorDetail().getMessage());
            return;
          }
          if ("1".equals(req.getVersionInfo())) {
            return; // ACK of what it has
          }
          List<Any> list = resources.get(req.getTypeUrl());
          if (list == null) {
            return;
          }
          synchronized (out) {
            out.onNext(
                DiscoveryResponse.newBuilder()
                    .setVersionInfo("1")
                    .setTypeUrl(req.getTypeUrl())
                    .setNonce(Integer.toString(nonce.incrementAndGet()))
                    .addAllResources(list)
                    .build());
          }
        }

        @Override
        public void onError(Throwable t) {}

        @Override
        public void onCompleted() {
          out.onCompleted();
        }
      };
    }
  }

  @Override
  public void close() {
    server.shutdownNow();
    try {
      server.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
