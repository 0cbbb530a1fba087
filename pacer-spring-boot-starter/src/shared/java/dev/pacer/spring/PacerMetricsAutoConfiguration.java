package dev.pacer.spring;

import dev.pacer.LimiterRegistry;
import dev.pacer.micrometer.PacerMetrics;
import io.micrometer.core.instrument.binder.MeterBinder;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Pacer's meters ({@code pacer.*}, tagged {@code destination}; see {@link PacerMetrics}) for every
 * limiter of the application's {@link LimiterRegistry}, when Micrometer and pacer-micrometer are on
 * the class path: Spring Boot binds the {@link MeterBinder} to its meter registries.
 */
@AutoConfiguration(after = PacerAutoConfiguration.class)
@ConditionalOnClass({MeterBinder.class, PacerMetrics.class})
public class PacerMetricsAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnBean(LimiterRegistry.class)
  public PacerMetrics pacerMetrics(LimiterRegistry registry) {
    return new PacerMetrics(registry);
  }
}
