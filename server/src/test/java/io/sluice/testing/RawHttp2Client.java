package io.sluice.testing;

import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A bare HTTP/2 (h2c, prior knowledge) client for abuse tests: it writes frames as told, ignoring
 * what the server's SETTINGS ask (a header list over {@code SETTINGS_MAX_HEADER_LIST_SIZE},
 * RST_STREAM at full speed), which a real client library refuses to do. HPACK: every field a
 * literal without indexing, no Huffman. A reader thread answers SETTINGS and PING and counts what
 * the server sends.
 */
public final class RawHttp2Client implements AutoCloseable {
  private static final byte[] PREFACE =
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
  private static final int DATA = 0;
  private static final int HEADERS = 1;
  private static final int RST_STREAM = 3;
  private static final int SETTINGS = 4;
  private static final int PING = 6;
  private static final int GOAWAY = 7;

  private final Socket socket;
  private final OutputStream out;
  private final Thread reader;
  private final AtomicInteger goaways = new AtomicInteger();
  private final AtomicLong goAwayError = new AtomicLong(-1);
  private final AtomicInteger resetsReceived = new AtomicInteger();
  private final AtomicInteger headersReceived = new AtomicInteger();
  private final AtomicInteger pingAcks = new AtomicInteger();
  private final CountDownLatch closed = new CountDownLatch(1);
  private final java.util.concurrent.atomic.AtomicIntegerArray framesByType =
      new java.util.concurrent.atomic.AtomicIntegerArray(16);
  private int nextStreamId = 1;

  /** How many frames of each type (0..15) the server sent, for diagnostics. */
  public String framesSeen() {
    return framesByType.toString();
  }

  public RawHttp2Client(int port) throws IOException {
    this(connect(port));
  }

  /** Over {@code socket}, connected (and for TLS, handshaken with ALPN {@code h2}). */
  public RawHttp2Client(Socket socket) throws IOException {
    this.socket = socket;
    socket.setTcpNoDelay(true);
    this.out = new BufferedOutputStream(socket.getOutputStream(), 64 << 10);
    synchronized (this) {
      out.write(PREFACE);
      frame(SETTINGS, 0, 0, new byte[0]);
      out.flush();
    }
    this.reader = new Thread(this::read, "raw-h2-reader");
    reader.setDaemon(true);
    reader.start();
  }

  private static Socket connect(int port) throws IOException {
    Socket s = new Socket();
    s.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
    return s;
  }

  /** The ext_proc method's request headers plus {@code extra}. */
  public static Map<String, String> grpcHeaders(String path, Map<String, String> extra) {
    var h = new java.util.LinkedHashMap<String, String>();
    h.put(":method", "POST");
    h.put(":scheme", "http");
    h.put(":path", path);
    h.put(":authority", "127.0.0.1");
    h.put("content-type", "application/grpc");
    h.put("te", "trailers");
    h.putAll(extra);
    return h;
  }

  /** Opens a stream with {@code headers} (END_HEADERS, not END_STREAM); returns its id. */
  public synchronized int headers(Map<String, String> headers) throws IOException {
    int id = nextStreamId;
    nextStreamId += 2;
    frame(HEADERS, 0x4, id, hpack(headers));
    return id;
  }

  /** A DATA frame carrying {@code payload} on {@code streamId}. */
  public synchronized void data(int streamId, byte[] payload, boolean endStream)
      throws IOException {
    frame(DATA, endStream ? 0x1 : 0, streamId, payload);
  }

  /** One gRPC message (the 5-byte prefix: not compressed, length; then the bytes). */
  public static byte[] grpcMessage(byte[] message) {
    byte[] m = new byte[5 + message.length];
    m[1] = (byte) (message.length >>> 24);
    m[2] = (byte) (message.length >>> 16);
    m[3] = (byte) (message.length >>> 8);
    m[4] = (byte) message.length;
    System.arraycopy(message, 0, m, 5, message.length);
    return m;
  }

  /** RST_STREAM(CANCEL) on {@code streamId}. */
  public synchronized void reset(int streamId) throws IOException {
    frame(RST_STREAM, 0, streamId, new byte[] {0, 0, 0, 8});
  }

  public synchronized void flush() throws IOException {
    out.flush();
  }

  private void frame(int type, int flags, int streamId, byte[] payload) throws IOException {
    int n = payload.length;
    out.write(n >>> 16);
    out.write(n >>> 8);
    out.write(n);
    out.write(type);
    out.write(flags);
    out.write(streamId >>> 24);
    out.write(streamId >>> 16);
    out.write(streamId >>> 8);
    out.write(streamId);
    out.write(payload);
  }

  private static byte[] hpack(Map<String, String> headers) {
    var b = new java.io.ByteArrayOutputStream();
    headers.forEach(
        (k, v) -> {
          b.write(0); // literal without indexing, new name
          string(b, k.getBytes(StandardCharsets.US_ASCII));
          string(b, v.getBytes(StandardCharsets.US_ASCII));
        });
    return b.toByteArray();
  }

  private static void string(java.io.ByteArrayOutputStream b, byte[] s) {
    int n = s.length; // 7-bit prefix integer, no Huffman
    if (n < 127) {
      b.write(n);
    } else {
      b.write(127);
      n -= 127;
      while (n >= 128) {
        b.write((n & 0x7f) | 0x80);
        n >>>= 7;
      }
      b.write(n);
    }
    b.write(s, 0, s.length);
  }

  private void read() {
    try (DataInputStream in = new DataInputStream(socket.getInputStream())) {
      while (true) {
        int len = (in.readUnsignedByte() << 16) | in.readUnsignedShort();
        int type = in.readUnsignedByte();
        int flags = in.readUnsignedByte();
        int stream = in.readInt() & 0x7fffffff;
        byte[] payload = new byte[len];
        in.readFully(payload);
        framesByType.incrementAndGet(type & 0xf);
        switch (type) {
          case SETTINGS -> {
            if ((flags & 1) == 0) {
              synchronized (this) {
                frame(SETTINGS, 1, 0, new byte[0]);
                out.flush();
              }
            }
          }
          case PING -> {
            if ((flags & 1) != 0) {
              pingAcks.incrementAndGet();
            } else {
              synchronized (this) {
                frame(PING, 1, 0, payload);
                out.flush();
              }
            }
          }
          case GOAWAY -> {
            goAwayError.set(
                ((payload[4] & 0xffL) << 24)
                    | ((payload[5] & 0xff) << 16)
                    | ((payload[6] & 0xff) << 8)
                    | (payload[7] & 0xff));
            goaways.incrementAndGet();
          }
          case RST_STREAM -> resetsReceived.incrementAndGet();
          case HEADERS -> headersReceived.incrementAndGet();
          default -> {}
        }
      }
    } catch (IOException e) {
      // the server closed the connection (or we did)
    } finally {
      closed.countDown();
    }
  }

  /** A PING; the server acks it after it has read every frame before it. */
  public synchronized void ping() throws IOException {
    frame(PING, 0, 0, new byte[8]);
    out.flush();
  }

  /** PING acks received. */
  public int pingAcks() {
    return pingAcks.get();
  }

  public int goaways() {
    return goaways.get();
  }

  /** The error code of the last GOAWAY (0xb is ENHANCE_YOUR_CALM), or -1. */
  public long goAwayError() {
    return goAwayError.get();
  }

  public int resetsReceived() {
    return resetsReceived.get();
  }

  public int headersReceived() {
    return headersReceived.get();
  }

  /** Whether the server closed the connection within {@code millis}. */
  public boolean awaitClosed(long millis) throws InterruptedException {
    return closed.await(millis, TimeUnit.MILLISECONDS);
  }

  public boolean isClosed() {
    return closed.getCount() == 0;
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
