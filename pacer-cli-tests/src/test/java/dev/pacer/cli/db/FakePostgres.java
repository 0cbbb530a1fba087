package dev.pacer.cli.db;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;

/**
 * A phishing server for the embedded PostgreSQL's port, as a process of its own (run as another
 * account where the test can): it speaks just enough of the protocol to ask every client for a
 * cleartext password ({@code AuthenticationCleartextPassword}) and prints what it hears, one event
 * a line, on its standard output: {@code listening}, {@code connection}, {@code ssl-request},
 * {@code tls} (a handshake completed), {@code startup}, {@code password BASE64} (what a client sent
 * for the password, a leak), {@code closed REASON}. It ends when its standard input closes.
 *
 * <p>Without a certificate it declines TLS ({@code N}); with one (PEM files) it accepts TLS and
 * presents it: an attacker can make a certificate of its own for 127.0.0.1, and the test can hand
 * it the real server's, to check the login itself. It uses nothing but the JDK, so that {@link
 * FakePostgresProcess} can copy this one class file to a directory the other account can read.
 */
final class FakePostgres {

  private static final int SSL_REQUEST = 80877103;
  private static final int GSS_ENCRYPTION_REQUEST = 80877104;

  private FakePostgres() {}

  /** {@code PORT [CERTIFICATE.pem KEY.pem]}. */
  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    SSLContext tls = args.length > 1 ? tls(Path.of(args[1]), Path.of(args[2])) : null;
    ServerSocket server = new ServerSocket();
    server.setReuseAddress(true);
    server.bind(new java.net.InetSocketAddress(InetAddress.getByName("127.0.0.1"), port));
    say("listening");
    Thread acceptor =
        new Thread(
            () -> {
              while (true) {
                try {
                  Socket client = server.accept();
                  new Thread(() -> serve(client, tls)).start();
                } catch (IOException e) {
                  return;
                }
              }
            });
    acceptor.setDaemon(true);
    acceptor.start();
    System.in.transferTo(OutputStream.nullOutputStream());
    server.close();
    System.exit(0);
  }

  private static void serve(Socket socket, SSLContext tls) {
    say("connection");
    try (Socket client = socket) {
      client.setSoTimeout(10_000);
      Socket stream = client;
      DataInputStream in = new DataInputStream(client.getInputStream());
      int code;
      while (true) {
        int length = in.readInt();
        code = in.readInt();
        in.skipNBytes(length - 8L);
        if (code == GSS_ENCRYPTION_REQUEST) {
          client.getOutputStream().write('N');
        } else if (code == SSL_REQUEST) {
          say("ssl-request");
          client.getOutputStream().write(tls == null ? 'N' : 'S');
          client.getOutputStream().flush();
          if (tls != null) {
            SSLSocket wrapped =
                (SSLSocket)
                    tls.getSocketFactory()
                        .createSocket(client, "127.0.0.1", client.getPort(), true);
            wrapped.setUseClientMode(false);
            wrapped.startHandshake();
            say("tls");
            stream = wrapped;
            in = new DataInputStream(wrapped.getInputStream());
          }
        } else {
          break;
        }
      }
      say("startup");
      DataOutputStream out = new DataOutputStream(stream.getOutputStream());
      out.writeByte('R');
      out.writeInt(8);
      out.writeInt(3); // AuthenticationCleartextPassword
      out.flush();
      int type = in.read();
      if (type == 'p') {
        byte[] body = new byte[in.readInt() - 4];
        in.readFully(body);
        say("password " + Base64.getEncoder().encodeToString(body));
      }
      say("closed " + (type == -1 ? "by the client" : "after message " + (char) type));
    } catch (IOException | RuntimeException e) {
      say("closed " + e);
    }
  }

  private static SSLContext tls(Path certificate, Path key) throws Exception {
    Certificate parsed =
        CertificateFactory.getInstance("X.509")
            .generateCertificate(new java.io.ByteArrayInputStream(Files.readAllBytes(certificate)));
    String pem =
        Files.readString(key, StandardCharsets.US_ASCII)
            .replaceAll("-----[A-Z ]+-----", "")
            .replaceAll("\\s", "");
    PrivateKey privateKey =
        KeyFactory.getInstance("EC")
            .generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder().decode(pem)));
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    char[] password = "fake".toCharArray();
    store.setKeyEntry("server", privateKey, password, new Certificate[] {parsed});
    KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    keys.init(store, password);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(keys.getKeyManagers(), null, null);
    return context;
  }

  private static synchronized void say(String event) {
    System.out.println(event);
    System.out.flush();
  }
}
