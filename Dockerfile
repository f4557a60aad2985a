# annex's image: `minikube image build -t annex:0.1.0 .`
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm ci --ignore-scripts && npx tsc -p tsconfig.build.json

FROM node:20-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts
COPY --from=build /app/dist ./dist
USER 65532:65532
ENTRYPOINT ["node", "/app/dist/cli/main.js"]
