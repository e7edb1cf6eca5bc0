# pyairport's Flight server on local Spark: the wheel with [spark], the Delta jars from Maven
# Central (make jars), a JDK 17 runtime, a user of its own, serve --config as the entry point
# and `pyairport health` as the health check. docs/deploy.md: building, running, compose.
#   docker build -t pyairport .
#   docker run -p 8815:8815 -p 9815:9815 -v "$PWD/warehouse:/var/lib/pyairport/warehouse" pyairport

# The Delta jars, fetched once at build time: the server needs no network to start.
FROM maven:3.9-eclipse-temurin-17 AS jars
RUN apt-get update && apt-get install -y --no-install-recommends make \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
RUN make jars JARS=/jars

# The wheel, built from this checkout (the generated package and the contract inside).
FROM python:3.12-slim AS wheel
WORKDIR /src
COPY . .
RUN pip install --no-cache-dir build && python -m build --wheel --outdir /dist

FROM eclipse-temurin:17-jre-noble
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv \
    && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/pyairport
COPY --from=wheel /dist /tmp/dist
RUN /opt/pyairport/bin/pip install --no-cache-dir "$(ls /tmp/dist/pyairport-*.whl)[spark]" \
    && rm -rf /tmp/dist
COPY --from=jars /jars /opt/pyairport/jars
COPY deploy/pyairport.toml /etc/pyairport/pyairport.toml
RUN useradd --system --create-home --home-dir /var/lib/pyairport pyairport \
    && mkdir -p /var/lib/pyairport/warehouse && chown pyairport /var/lib/pyairport/warehouse
USER pyairport
WORKDIR /var/lib/pyairport
ENV PATH=/opt/pyairport/bin:$PATH
EXPOSE 8815 9815
VOLUME /var/lib/pyairport/warehouse
HEALTHCHECK --interval=15s --timeout=10s --start-period=120s \
    CMD ["pyairport", "health", "--config", "/etc/pyairport/pyairport.toml"]
ENTRYPOINT ["pyairport", "serve", "--config", "/etc/pyairport/pyairport.toml"]
