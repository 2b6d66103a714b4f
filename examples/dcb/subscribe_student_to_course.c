/* Command subscribeStudentToCourse of the DCB example "course subscriptions"
 * (tests/fixtures/dcb-examples/course-subscriptions.json, block course_subscription_03):
 * a student joins a course that exists, is not full, and is not already theirs, and holds at
 * most 5 courses. Module subscribe-student-to-course, version 1.0.0.
 *
 * Input: {"studentId": text, "courseId": text}.
 * Decision models (course_models.h): courseExists, courseCapacity,
 * numberOfCourseSubscriptions (courseId); numberOfStudentSubscriptions (studentId);
 * studentAlreadySubscribed (studentId, courseId). The one query reads the course's and the
 * student's events, so a subscription to the same course or by the same student in between
 * makes the append fail.
 * Checks, in order:
 *   !courseExists                                   -> "Course \"{courseId}\" does not exist"
 *   numberOfCourseSubscriptions >= courseCapacity   -> "Course \"{courseId}\" is already fully
 *                                                       booked"
 *   studentAlreadySubscribed      -> "Student already subscribed to this course"
 *   numberOfStudentSubscriptions >= 5  -> "Student already subscribed to 5 courses"
 * then appends StudentSubscribedToCourse {"studentId", "courseId"} tagged
 * student:{studentId}, course:{courseId}. */
#include "course_models.h"

/* Most courses one student may hold. */
#define MAX_COURSES_PER_STUDENT 5

enum {
  COURSE_EXISTS,
  COURSE_CAPACITY,
  COURSE_SUBSCRIPTIONS,
  STUDENT_SUBSCRIPTIONS,
  ALREADY_SUBSCRIBED,
  MODEL_COUNT
};

static void bind(dcb_input* input, dcb_model models[MODEL_COUNT]) {
  reef_str student_id = dcb_input_text(input, "studentId");
  reef_str course_id = dcb_input_text(input, "courseId");
  models[COURSE_EXISTS] = course_exists(course_id);
  models[COURSE_CAPACITY] = course_capacity(course_id);
  models[COURSE_SUBSCRIPTIONS] = number_of_course_subscriptions(course_id);
  models[STUDENT_SUBSCRIPTIONS] = number_of_student_subscriptions(student_id);
  models[ALREADY_SUBSCRIBED] = student_already_subscribed(student_id, course_id);
}

static reef_cbor init(reef_cbor input, reef_writer* query) {
  dcb_input in = dcb_input_of(input);
  dcb_model models[MODEL_COUNT];
  bind(&in, models);
  return dcb_init(&in, models, MODEL_COUNT, query);
}

static reef_cbor fold(reef_cbor state, reef_cbor input, const reef_event* event) {
  dcb_input in = dcb_input_of(input);
  dcb_model models[MODEL_COUNT];
  bind(&in, models);
  return dcb_fold(state, models, MODEL_COUNT, event);
}

static reef_cbor decide(reef_cbor state, reef_cbor input) {
  dcb_input in = dcb_input_of(input);
  reef_str student_id = dcb_input_text(&in, "studentId");
  reef_str course_id = dcb_input_text(&in, "courseId");
  if (in.error.len > 0) return dcb_reject_input(&in);
  if (!dcb_state_bool(state, "courseExists")) {
    return reef_reject("Course \"%.*s\" does not exist", (int)course_id.len, course_id.ptr);
  }
  if (dcb_number_ge(dcb_state_number(state, "numberOfCourseSubscriptions"),
                    dcb_state_number(state, "courseCapacity"))) {
    return reef_reject("Course \"%.*s\" is already fully booked", (int)course_id.len,
                       course_id.ptr);
  }
  if (dcb_state_bool(state, "studentAlreadySubscribed")) {
    return reef_reject("Student already subscribed to this course");
  }
  if (dcb_number_ge(dcb_state_number(state, "numberOfStudentSubscriptions"),
                    dcb_int(MAX_COURSES_PER_STUDENT))) {
    return reef_reject("Student already subscribed to %d courses", MAX_COURSES_PER_STUDENT);
  }
  reef_writer data = reef_writer_new();
  reef_write_record(&data, 2);
  reef_write_cstr(&data, "studentId");
  reef_write_str(&data, student_id);
  reef_write_cstr(&data, "courseId");
  reef_write_str(&data, course_id);
  reef_str tags[] = {student_tag(student_id), course_tag(course_id)};
  return reef_accept("StudentSubscribedToCourse", 2, tags, reef_writer_finish(&data));
}

REEF_COMMAND(init, fold, decide);
