// The local Iceberg REST catalog, bound to loopback only.
//
// Iceberg's test-fixture RESTCatalogServer (iceberg-open-api test fixtures) listens on every
// interface and has no host setting. This launcher builds the same catalog (its backend from the
// CATALOG_* environment, through the server's own initialisation) and serves it with Jetty on
// 127.0.0.1:CATALOG_REST_PORT. Run as a single-file program: java LoopbackRestCatalog.java
// (infra/local/services.py). The fixture's internals are package-private, hence reflection.

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;

import org.apache.iceberg.rest.RESTCatalogAdapter;
import org.apache.iceberg.rest.RESTCatalogServlet;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public class LoopbackRestCatalog {
    public static void main(String[] args) throws Exception {
        String host = System.getenv().getOrDefault("CATALOG_REST_HOST", "127.0.0.1");
        int port = Integer.parseInt(System.getenv().getOrDefault("CATALOG_REST_PORT", "8181"));

        Class<?> fixture = Class.forName("org.apache.iceberg.rest.RESTCatalogServer");
        Constructor<?> newFixture = fixture.getDeclaredConstructor();
        newFixture.setAccessible(true);
        Method initBackend = fixture.getDeclaredMethod("initializeBackendCatalog");
        initBackend.setAccessible(true);
        Object catalogContext = initBackend.invoke(newFixture.newInstance());

        Class<?> adapterClass = Class.forName("org.apache.iceberg.rest.RESTServerCatalogAdapter");
        Constructor<?> newAdapter = adapterClass.getDeclaredConstructor(catalogContext.getClass());
        newAdapter.setAccessible(true);
        RESTCatalogAdapter adapter = (RESTCatalogAdapter) newAdapter.newInstance(catalogContext);

        ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
        context.addServlet(new ServletHolder(new RESTCatalogServlet(adapter)), "/*");
        Server http = new Server();
        ServerConnector connector = new ServerConnector(http);
        connector.setHost(host);
        connector.setPort(port);
        http.addConnector(connector);
        http.setHandler(context);
        http.start();
        System.out.println("Iceberg REST catalog listening on " + host + ":" + port);
        http.join();
    }
}
